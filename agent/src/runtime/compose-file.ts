// Rendering a deployment's parameters into a component's compose file. Pure: text in, text out.
//
// The desired state gives each component its values by target pointer (the service rendered
// the manifest's `parameters.<name>.targets`: `{ "vision-gateway": { "POLL_SECONDS": 60 } }`,
// docs/deployments.md). The rule for a pointer, as Margo reads a compose profile's pointers:
//
// * an environment variable name (`POLL_SECONDS`, [A-Za-z_][A-Za-z0-9_]*) sets
//   `environment.POLL_SECONDS` of every service of the file, as a string (numbers and booleans
//   as written, objects as JSON; `$` doubled so compose interpolation leaves the value as it
//   is), and the value goes into the `.env` file beside compose.yaml, so that `${POLL_SECONDS}`
//   anywhere in the file (an image tag, a port) takes it: docker compose and podman-compose both
//   read `.env` from the compose file's directory.
// * a JSON pointer (RFC 6901, starting with `/`, such as `/services/web/ports/0`) sets that
//   place of the document to the value with its type; missing maps on the way are created.
// * anything else (a Helm values path such as `global.poll`) is refused with the pointer named.
//
// A file that is not YAML, or has no `services` map with at least one service, is refused.
import { isMap, isSeq, parseDocument, Scalar, YAMLMap, type Document } from "yaml";

export interface RenderedComposeProject {
  /** compose.yaml with the parameters applied (comments and layout of the original kept) */
  compose: string;
  /** the .env file: one NAME=value line per environment-variable parameter; "" when none */
  env: string;
}

export class ComposeFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ComposeFileError";
  }
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The compose document, refused when it is not YAML or names no service. */
function parseCompose(text: string): Document.Parsed {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length) throw new ComposeFileError(`the compose file is not valid YAML: ${doc.errors[0].message.split("\n")[0]}`);
  const services = isMap(doc.contents) ? doc.contents.get("services") : undefined;
  if (!isMap(services) || services.items.length === 0) throw new ComposeFileError("the compose file has no services (a top-level `services` map naming at least one)");
  return doc;
}

/** The service names of a compose file (refused as renderComposeFile refuses it). */
export function composeServiceNames(text: string): string[] {
  const services = parseCompose(text).get("services") as YAMLMap;
  return services.items.map((item) => String(isScalarKey(item.key) ? item.key.value : item.key));
}

function isScalarKey(key: unknown): key is Scalar {
  return key instanceof Scalar;
}

/** A parameter value as an environment variable's text. */
function envText(value: unknown): string {
  return typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : JSON.stringify(value);
}

/**
 * One `.env` line. Bare when the value is plain; single-quoted (literal in docker compose and in
 * python-dotenv, which podman-compose uses) when it holds no quote, backslash or newline; else
 * double-quoted with \\, \" and \n escaped.
 */
function envLine(name: string, text: string): string {
  if (/^[A-Za-z0-9_.,:/@+-]*$/.test(text)) return `${name}=${text}`;
  if (!/['\\\n\r]/.test(text)) return `${name}='${text}'`;
  return `${name}="${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\r/g, "\\r").replace(/\n/g, "\\n")}"`;
}

/** Sets NAME in a service's `environment`, in the form the file uses (a map, or a list of NAME=value). */
function setEnvironment(doc: Document.Parsed, service: YAMLMap, name: string, text: string) {
  // `$$` is compose's literal dollar: the value must not be interpolated.
  const escaped = new Scalar(text.replace(/\$/g, "$$$$"));
  escaped.type = Scalar.QUOTE_DOUBLE;
  const environment = service.get("environment");
  if (isSeq(environment)) {
    const entry = `${name}=${escaped.value as string}`;
    const index = environment.items.findIndex((item) => {
      const raw = String(item instanceof Scalar ? item.value : item);
      return raw === name || raw.startsWith(`${name}=`);
    });
    const node = doc.createNode(entry) as Scalar;
    node.type = Scalar.QUOTE_DOUBLE;
    if (index >= 0) environment.items[index] = node;
    else environment.items.push(node);
    return;
  }
  if (isMap(environment)) return void environment.set(name, escaped);
  const map = new YAMLMap();
  map.set(name, escaped);
  service.set("environment", map);
}

/** RFC 6901: "/services/web/ports/0" -> ["services", "web", "ports", "0"]. */
function pointerPath(pointer: string): string[] {
  return pointer.slice(1).split("/").map((segment) => segment.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/**
 * The compose file with the component's parameter values applied, and the .env file to write
 * beside it. `values` is the component's entry of the desired state's `parameters`.
 */
export function renderComposeFile(text: string, values: Record<string, unknown>): RenderedComposeProject {
  const doc = parseCompose(text);
  // Nothing to apply: the file stays byte for byte what the package held.
  if (!Object.keys(values).length) return { compose: text, env: "" };
  const services = doc.get("services") as YAMLMap;
  const envLines: string[] = [];
  for (const [pointer, value] of Object.entries(values)) {
    if (ENV_NAME.test(pointer)) {
      const valueText = envText(value);
      for (const item of services.items) {
        if (!isMap(item.value)) throw new ComposeFileError(`service ${String(isScalarKey(item.key) ? item.key.value : item.key)} of the compose file is not a map`);
        setEnvironment(doc, item.value, pointer, valueText);
      }
      envLines.push(envLine(pointer, valueText));
    } else if (pointer.startsWith("/") && pointer.length > 1) {
      const path = pointerPath(pointer);
      const parent = doc.getIn(path.slice(0, -1), true);
      if (parent !== undefined && !isMap(parent) && !isSeq(parent)) throw new ComposeFileError(`parameter pointer ${pointer}: ${path.slice(0, -1).join("/")} is not a map or a list`);
      if (isSeq(parent) && !/^\d+$/.test(path[path.length - 1])) throw new ComposeFileError(`parameter pointer ${pointer}: a list is indexed by a number`);
      doc.setIn(path, doc.createNode(value));
    } else {
      throw new ComposeFileError(`parameter pointer ${JSON.stringify(pointer)} is neither an environment variable name (POLL_SECONDS) nor a JSON pointer into the compose file (/services/web/image)`);
    }
  }
  return { compose: doc.toString(), env: envLines.length ? `${envLines.join("\n")}\n` : "" };
}

/**
 * The image references of a rendered compose file as the engine will resolve them: `${NAME}`,
 * `${NAME:-default}` and `$NAME` interpolated from `env` (the .env values). Unreadable files name none.
 */
export function composeImages(text: string, env: Record<string, string>): string[] {
  const services = parseCompose(text).toJS().services as Record<string, { image?: unknown } | null>;
  const images = new Set<string>();
  for (const service of Object.values(services)) {
    if (typeof service?.image !== "string") continue;
    images.add(interpolateImage(service.image, env));
  }
  return [...images];
}

/** An image reference as compose interpolates it: `${NAME}`, `${NAME:-default}` and `$NAME` from `env`. */
function interpolateImage(image: string, env: Record<string, string>): string {
  return image
    .replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g, (_, name: string, fallback: string | undefined) => env[name] ?? fallback ?? "")
    .replace(/\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => env[name] ?? whole);
}

/** The environment-variable parameters of a component (what goes into its .env), as text. */
export function envParameters(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter(([pointer]) => ENV_NAME.test(pointer)).map(([name, value]) => [name, envText(value)]));
}

/**
 * The compose file with some of its services' images named otherwise: `rename` gets each
 * service's image as the engine will resolve it (interpolated from `env`, as composeImages) and
 * answers the reference to write instead, or null to leave the service as it is. The rest of the
 * file (comments, layout) is kept. Answers the new text and the references written.
 */
export function renameImages(text: string, env: Record<string, string>, rename: (image: string) => string | null): { compose: string; renamed: string[] } {
  const doc = parseCompose(text);
  const services = doc.get("services") as YAMLMap;
  const renamed = new Set<string>();
  for (const item of services.items) {
    if (!isMap(item.value)) continue;
    const image = item.value.get("image");
    if (typeof image !== "string") continue;
    const resolved = interpolateImage(image, env);
    const replacement = rename(resolved);
    if (replacement === null) continue;
    item.value.set("image", replacement);
    renamed.add(replacement);
  }
  return renamed.size ? { compose: doc.toString(), renamed: [...renamed] } : { compose: text, renamed: [] };
}
