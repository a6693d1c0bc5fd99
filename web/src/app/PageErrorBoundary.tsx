// A page that throws while rendering shows its error in place; the navigation stays usable
// and moving to another page clears it.
import { Component, type ReactNode } from "react";
import { ErrorState } from "../ui/states";

export class PageErrorBoundary extends Component<{ children: ReactNode }, { error: unknown; path: string }> {
  override state = { error: null as unknown, path: location.pathname };

  static getDerivedStateFromError(error: unknown) {
    return { error, path: location.pathname };
  }

  override render() {
    if (this.state.error != null && this.state.path === location.pathname) {
      return <ErrorState error={this.state.error} retry={() => this.setState({ error: null })} />;
    }
    return this.props.children;
  }
}
