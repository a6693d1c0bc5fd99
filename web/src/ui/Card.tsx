import { useId, type ReactNode } from "react";

export function Card({ title, actions, children, flush, headingLevel = 2, id }: {
  title?: ReactNode;
  actions?: ReactNode;
  children: ReactNode;
  /** no padding around the body (tables) */
  flush?: boolean;
  headingLevel?: 2 | 3;
  id?: string;
}) {
  const Heading = headingLevel === 2 ? "h2" : "h3";
  // Every card with a title is a region named by it, so that it can be found by its name.
  const generatedId = useId();
  const headingId = title ? (id ? `${id}-title` : generatedId) : undefined;
  return (
    <section className="card" aria-labelledby={headingId}>
      {(title || actions) && (
        <div className="card__header">
          {title && <Heading id={headingId}>{title}</Heading>}
          {actions && <div className="row">{actions}</div>}
        </div>
      )}
      <div className={flush ? "card__body card__body--flush" : "card__body"}>{children}</div>
    </section>
  );
}

export function PageHeader({ title, description, actions, breadcrumb }: { title: ReactNode; description?: ReactNode; actions?: ReactNode; breadcrumb?: ReactNode }) {
  return (
    <header className="page-header">
      <div className="page-header__text">
        {breadcrumb && <nav className="breadcrumb" aria-label="Breadcrumb">{breadcrumb}</nav>}
        <h1>{title}</h1>
        {description && <p>{description}</p>}
      </div>
      {actions && <div className="page-header__actions">{actions}</div>}
    </header>
  );
}
