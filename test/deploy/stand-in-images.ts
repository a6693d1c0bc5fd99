// The images deploy/compose.yaml names besides the service's own, made here because none can be
// pulled on the test machines: one Debian bookworm image (mmdebstrap minbase, as the base image
// of test/deploy/base-image.ts) with Debian's PostgreSQL 15 and nginx, standing in for the
// official `postgres` image (its entrypoint's contract: POSTGRES_USER, POSTGRES_PASSWORD,
// POSTGRES_DB, PGDATA=/var/lib/postgresql/data, pg_isready and pg_dump on PATH; see
// stand-ins/entrypoint.sh) and for the official `nginx` image of the replicas' variant (nginx
// on PATH, /etc/nginx/conf.d/*.conf read inside http {}).
//
// Made once per machine, like the base: tagged by a key of what it is made from; the Debian
// root file system (the slow part, minutes of downloads) is kept under /var/tmp by its own key,
// so a change of the entrypoint only re-imports it.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { debianRootfs, importRootfs } from "./base-image.js";
import { oneBuildAtATime } from "./service-image.js";

/** Change RECIPE when the way the root file system is made changes. */
const RECIPE = "1";
const SUITE = "bookworm";
const PACKAGES = ["postgresql-15", "nginx-light"];
const ENTRYPOINT = path.join(import.meta.dirname, "stand-ins", "entrypoint.sh");
/** The image's settings, as the official postgres image has them. */
const CHANGES = [
  "ENV=PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  "ENV=PGDATA=/var/lib/postgresql/data",
  'ENTRYPOINT=["/usr/local/bin/docker-entrypoint.sh"]',
  'CMD=["postgres"]',
  // SIGINT is PostgreSQL's fast shutdown
  "STOPSIGNAL=SIGINT",
];

function hash(material: string): string {
  return createHash("sha256").update(material).digest("hex").slice(0, 16);
}

/** The key of the Debian root file system alone. */
function rootfsKey(): string {
  return hash(JSON.stringify({ RECIPE, SUITE, variant: "minbase", PACKAGES, arch: process.arch }));
}

/** The image's key: the root file system, the entrypoint and the settings. */
export function standInKey(): string {
  return hash(rootfsKey() + fs.readFileSync(ENTRYPOINT, "utf8") + JSON.stringify(CHANGES));
}

/** The stand-in image (made when this machine has none of this key yet); `podman` runs the engine. */
export function ensureStandInImage(podman: (args: string[]) => Promise<string>): Promise<{ ref: string; made: boolean }> {
  return oneBuildAtATime(() => makeStandIn(podman));
}

async function makeStandIn(podman: (args: string[]) => Promise<string>): Promise<{ ref: string; made: boolean }> {
  const ref = `localhost/fleet-test-postgres:${standInKey()}`;
  if (await podman(["image", "exists", ref]).then(() => true, () => false)) return { ref, made: false };

  // the package's own cluster and nginx's default site: the entrypoint makes PGDATA, the compose file gives nginx its site
  const debian = await debianRootfs(`postgresql-nginx-${rootfsKey()}`, PACKAGES, [
    'rm -rf "$1"/var/lib/postgresql/15 "$1"/etc/postgresql/15 "$1"/etc/nginx/sites-enabled/default',
  ]);

  const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-stand-in-"));
  try {
    const stage = path.join(work, "stage");
    fs.mkdirSync(path.join(stage, "usr/local/bin"), { recursive: true });
    fs.copyFileSync(ENTRYPOINT, path.join(stage, "usr/local/bin/docker-entrypoint.sh"));
    fs.chmodSync(path.join(stage, "usr/local/bin/docker-entrypoint.sh"), 0o755);
    await importRootfs(podman, debian, stage, ["./usr/local/bin/docker-entrypoint.sh"], CHANGES, ref);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { ref, made: true };
}
