// The organization the session acts in: its details and its branding (colour and logo, which
// the console paints itself with: app/Shell.tsx). What is editable follows the API: renaming
// needs organizations:write (POST /organizations/{id}/rename); the description and branding
// organizations:branding (PATCH /organizations/{id}/branding: owners, custom roles given it);
// everything else is the organization update (spec op 8, PATCH), reserved for Super Admins.
import { useState, type ChangeEvent } from "react";
import { useQuery } from "@tanstack/react-query";
import { ImageUp, Trash2 } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { FormFooter } from "../ui/FormFooter";
import { ErrorState, Forbidden, Loading } from "../ui/states";
import { formatDateTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { brandingOf, contrast, HEX_COLOR, LOGO_MAX_BYTES, LOGO_TYPES, paletteFor, withBranding, type Branding } from "./branding";
import { RemoteAccessCard } from "../remote-sessions/RemoteAccessCard";
import "./organizations.css";

type Organization = RouterOutputs["organizations"]["get"];

export const STATUS_TONE: Record<Organization["status"], string> = { active: "success", pending: "warning", suspended: "warning", disabled: "danger" };

export function OrganizationSettingsPage() {
  const session = useSession();
  const canRead = useCan("organizations:read");
  const org = useQuery({ ...q.organizations.get.options({ id: session.organization.id }), enabled: canRead });
  if (!canRead) return <><PageHeader title="Organization settings" /><Forbidden what="this organization's settings" /></>;
  return (
    <>
      <PageHeader
        title="Organization settings"
        description={`The name, contact and look of ${session.organization.name}. The colour and logo are shown to every member in this console.`}
      />
      {org.isError ? <ErrorState error={org.error} what="this organization's settings" retry={() => org.refetch()} />
        : !org.data ? <Loading />
        : (
          <div className="stack">
            {/* Each form is keyed by the values it edits: a save (or someone else's, on refetch) starts
                that form afresh, and never throws away what is being typed into the other one. */}
            <DetailsCard key={JSON.stringify([org.data.name, org.data.description, org.data.primaryContact, org.data.billingEmail])} org={org.data} />
            <BrandingCard key={JSON.stringify(org.data.branding ?? null)} org={org.data} />
            <RemoteAccessCard />
          </div>
        )}
    </>
  );
}

/** What a save changes: the organization, and the session, which names it too (header, sidebar logo): a rename shows there at once. */
const SAVED_KEYS = () => [q.organizations.key(), q.tenant.context.key()];

function DetailsCard({ org }: { org: Organization }) {
  const session = useSession();
  const canRename = useCan("organizations:write");
  const canBrand = useCan("organizations:branding");
  const isSuperAdmin = session.isSuperAdmin;
  const [name, setName] = useState(org.name);
  const [description, setDescription] = useState(org.description ?? "");
  const [contact, setContact] = useState(org.primaryContact ?? "");
  const [billingEmail, setBillingEmail] = useState(org.billingEmail ?? "");
  const nameProblem = name.trim().length < 2 ? "At least 2 characters" : undefined;
  const save = useAction({
    mutationFn: async () => {
      if (isSuperAdmin) {
        await q.organizations.update.call({
          id: org.id,
          name: name.trim(),
          description: description.trim() || null,
          primaryContact: contact.trim() || null,
          billingEmail: billingEmail.trim() || null,
        });
      } else {
        if (canRename && name.trim() !== org.name) await q.organizations.rename.call({ id: org.id, name: name.trim() });
        const nextDescription = description.trim() || null;
        if (canBrand && nextDescription !== (org.description ?? null)) await q.organizations.brand.call({ id: org.id, description: nextDescription });
      }
    },
  }, { invalidates: SAVED_KEYS(), success: "Organization details saved" });

  const facts = (
    <dl className="facts">
      <dt>Slug</dt><dd><code>{org.slug}</code></dd>
      <dt>Status</dt><dd><span className={`badge badge--${STATUS_TONE[org.status]}`}>{org.status}</span></dd>
      <dt>Created</dt><dd>{formatDateTime(org.createdAt)}</dd>
      {!isSuperAdmin && (
        <>
          {!canRename && <><dt>Name</dt><dd>{org.name}</dd></>}
          {!canBrand && <><dt>Description</dt><dd>{org.description || <span className="faint">none</span>}</dd></>}
          <dt>Primary contact</dt><dd>{org.primaryContact || <span className="faint">none</span>}</dd>
          <dt>Billing e-mail</dt><dd>{org.billingEmail || <span className="faint">none</span>}</dd>
        </>
      )}
    </dl>
  );

  if (!canRename && !canBrand && !isSuperAdmin) return <Card title="Details">{facts}</Card>;
  return (
    <Card title="Details">
      <form className="stack" onSubmit={save.submit(() => undefined, { valid: !nameProblem })} aria-label="Organization details">
        {(canRename || isSuperAdmin) && (
          <div className="field">
            <label htmlFor="org-name">Name</label>
            <input id="org-name" className="input" required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} aria-invalid={!!nameProblem} aria-describedby={nameProblem ? "org-name-problem" : undefined} />
            {nameProblem && <span id="org-name-problem" className="field__error">{nameProblem}</span>}
          </div>
        )}
        {(canBrand || isSuperAdmin) && (
          <div className="field">
            <label htmlFor="org-description">Description</label>
            <textarea id="org-description" className="input" rows={2} maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />
          </div>
        )}
        {isSuperAdmin && (
          <>
            <div className="grid grid--2">
              <div className="field">
                <label htmlFor="org-contact">Primary contact</label>
                <input id="org-contact" className="input" maxLength={200} value={contact} onChange={(e) => setContact(e.target.value)} placeholder="Jane Doe, +49 30 1234567" />
              </div>
              <div className="field">
                <label htmlFor="org-billing">Billing e-mail</label>
                <input id="org-billing" className="input" type="email" maxLength={320} value={billingEmail} onChange={(e) => setBillingEmail(e.target.value)} />
              </div>
            </div>
          </>
        )}
        {facts}
        {!isSuperAdmin && <p className="field__hint">Only a Super Admin can change the {canBrand ? "" : "description, "}contact and billing e-mail.</p>}
        <FormFooter action={save} inline={false} disabled={!!nameProblem} submitLabel={isSuperAdmin || canBrand ? "Save details" : "Rename"} />
      </form>
    </Card>
  );
}

function readAsDataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("The file could not be read"));
    reader.readAsDataURL(file);
  });
}

/** How the colour will look in each theme, and whether it had to be adjusted for contrast. */
function PalettePreview({ color }: { color: string }) {
  return (
    <div className="brand-preview" aria-label="Preview" role="group">
      {(["light", "dark"] as const).map((theme) => {
        const p = paletteFor(color, theme);
        return (
          <div key={theme} className="brand-preview__theme" data-theme-preview={theme}>
            <span className="brand-preview__swatch" ref={(el) => el?.style.setProperty("background", p.accent)} aria-hidden="true" />
            <span>
              {theme === "light" ? "Light theme" : "Dark theme"}: <code>{p.accent}</code>
              {p.accent !== color.toLowerCase() && <span className="faint"> (adjusted for contrast; {contrast(color, theme === "light" ? "#ffffff" : "#171b21").toFixed(1)}:1 as chosen)</span>}
            </span>
          </div>
        );
      })}
    </div>
  );
}

function BrandingCard({ org }: { org: Organization }) {
  const session = useSession();
  const canBrand = useCan("organizations:branding");
  const canEdit = session.isSuperAdmin || canBrand;
  const stored = brandingOf(org.branding);
  const [useColor, setUseColor] = useState(!!stored.primaryColor);
  const [color, setColor] = useState(stored.primaryColor ?? "#1d5fd6");
  const [logo, setLogo] = useState<string | undefined>(stored.logo);
  const [logoProblem, setLogoProblem] = useState<string | null>(null);
  const colorProblem = useColor && !HEX_COLOR.test(color) ? "A colour as #rrggbb, e.g. #0a7d5a" : undefined;

  async function chooseLogo(event: ChangeEvent<HTMLInputElement>) {
    const file = event.target.files?.[0];
    event.target.value = "";
    if (!file) return;
    if (!(LOGO_TYPES as readonly string[]).includes(file.type)) return setLogoProblem("A PNG, JPEG, SVG, WebP or GIF image");
    if (file.size > LOGO_MAX_BYTES) return setLogoProblem(`At most ${LOGO_MAX_BYTES / 1024} KB (this one is ${Math.ceil(file.size / 1024)} KB)`);
    setLogoProblem(null);
    setLogo(await readAsDataUrl(file));
  }

  const save = useAction({
    mutationFn: async () => {
      const next: Branding = { ...(useColor ? { primaryColor: color.toLowerCase() } : {}), ...(logo ? { logo } : {}) };
      const branding = withBranding(org.branding, next);
      if (canBrand) await q.organizations.brand.call({ id: org.id, branding });
      else await q.organizations.update.call({ id: org.id, branding });
    },
  }, { invalidates: SAVED_KEYS(), success: "Branding saved: the console now shows it to every member" });

  if (!canEdit) {
    return (
      <Card title="Branding">
        <dl className="facts">
          <dt>Colour</dt>
          <dd>{stored.primaryColor ? <code>{stored.primaryColor}</code> : <span className="faint">the console's own</span>}</dd>
          <dt>Logo</dt>
          <dd>{stored.logo ? <img className="brand-logo-preview" src={stored.logo} alt={`${org.name} logo`} /> : <span className="faint">none</span>}</dd>
        </dl>
      </Card>
    );
  }
  return (
    <Card title="Branding">
      <form className="stack" onSubmit={save.submit(() => undefined, { valid: !colorProblem })} aria-label="Branding">
        <label className="row">
          <input type="checkbox" checked={useColor} onChange={(e) => setUseColor(e.target.checked)} />
          <span>Use an organization colour</span>
        </label>
        {useColor && (
          <>
            <div className="row brand-color">
              <div className="field">
                <label htmlFor="brand-color-picker">Colour</label>
                <input id="brand-color-picker" type="color" className="brand-color__picker" value={HEX_COLOR.test(color) ? color.toLowerCase() : "#000000"} onChange={(e) => setColor(e.target.value)} />
              </div>
              <div className="field">
                <label htmlFor="brand-color-hex">Hex value</label>
                <input id="brand-color-hex" className="input" value={color} maxLength={7} onChange={(e) => setColor(e.target.value.trim())} aria-invalid={!!colorProblem} aria-describedby={colorProblem ? "brand-color-problem" : "brand-color-hint"} />
              </div>
            </div>
            {colorProblem
              ? <span id="brand-color-problem" className="field__error">{colorProblem}</span>
              : <span id="brand-color-hint" className="field__hint">Buttons, links and highlights use it. Where it would be hard to read, the console darkens it (light theme) or lightens it (dark theme) just enough.</span>}
            {!colorProblem && <PalettePreview color={color} />}
          </>
        )}
        <div className="field">
          <span className="field__label" id="brand-logo-label">Logo</span>
          <div className="row">
            {logo ? <img className="brand-logo-preview" src={logo} alt="Logo preview" /> : <span className="faint">No logo: the console's own icon is shown.</span>}
          </div>
          <div className="row">
            {/* The file input itself is hidden; its label is the button (focus shows on it, organizations.css). */}
            <input id="brand-logo-file" className="visually-hidden brand-logo-file" type="file" accept={LOGO_TYPES.join(",")} onChange={chooseLogo} aria-describedby="brand-logo-hint" />
            <label className="btn btn--small" htmlFor="brand-logo-file">
              <ImageUp aria-hidden="true" /> Choose logo
            </label>
            {logo && <Button size="small" icon={<Trash2 />} onClick={() => setLogo(undefined)}>Remove logo</Button>}
          </div>
          {logoProblem ? <span className="field__error" role="alert">{logoProblem}</span>
            : <span id="brand-logo-hint" className="field__hint">PNG, JPEG, SVG, WebP or GIF, at most {LOGO_MAX_BYTES / 1024} KB; shown at 26 px high in the sidebar.</span>}
        </div>
        <FormFooter action={save} inline={false} disabled={!!colorProblem} submitLabel="Save branding" />
      </form>
    </Card>
  );
}
