import { Package } from "lucide-react";

/** The application's icon from the icon route (decorative: its name is next to it), else a generic one. */
export function AppIcon({ app, size = 32 }: { app: { hasIcon: boolean; iconUrl?: string; updatedAt: string }; size?: number }) {
  if (app.hasIcon && app.iconUrl) {
    return <img className="app-icon" src={`${app.iconUrl}?v=${encodeURIComponent(app.updatedAt)}`} alt="" width={size} height={size} loading="lazy" />;
  }
  return <span className="app-icon app-icon--none" aria-hidden="true"><Package /></span>;
}
