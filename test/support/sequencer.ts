// The order files start in.
//
// 1. Files that start containers (Podman, Docker: test/agent/, test/deploy/) come first, and the
//    browser tests last. Starting a container adds and removes network interfaces on the host,
//    and Chromium then fails every request in flight with net::ERR_NETWORK_CHANGED (its network
//    change notifier): a page's scripts did not load in the clean-clone run of 087d2f9 while the
//    deploy tests ran beside the role walk. With the API tests in between, the last container
//    file ends long before the first browser file starts.
// 2. Within each group the longest first, so that no long file starts near the end of a phase
//    while the other workers sit idle. vitest orders by the durations of the previous run (its
//    cache) and, without one (a clean clone), by file size; in .ci/run the PostgreSQL phase
//    inherits the PGlite phase's durations, where the PostgreSQL-only files were skipped in ~0 s
//    (the Prisma CLI's upgrade test then started last and ended the phase alone). Files known to
//    be long (30 s or more in a CI run) are named; the rest keep vitest's order.
import { BaseSequencer, type TestSpecification } from "vitest/node";

const CONTAINERS = ["test/agent/", "test/deploy/"];
const BROWSER = "test/browser/";

const LONG_FIRST = [
  "test/http/upgrade/prisma-migrate-deploy.test.ts",
  "test/agent/agent-e2e.test.ts",
  "test/deploy/systemd-run.test.ts",
  "test/deploy/compose-docker.test.ts",
  "test/agent/remote-port-forward-e2e.test.ts",
  "test/http/agent/agent-outage.test.ts",
  "test/agent/actions-e2e.test.ts",
  // real RAUC on loop devices: an agent started nine times, about 2.5 minutes
  "test/agent/os-update/rauc.test.ts",
  "test/deploy/compose-up.test.ts",
  "test/agent/agent-docker-e2e.test.ts",
  "test/deploy/kubernetes.test.ts",
  "test/browser/app/role-walk.test.ts",
  "test/fuzz/",
  "test/http/faults/",
  "test/http/operations/",
  "test/browser/app/readme-tour.test.ts",
  "test/browser/devices/terminal.test.ts",
  "test/browser/app/roles.test.ts",
  "test/agent/runtime.test.ts",
  "test/cli/",
  "test/deploy/",
  "test/agent/",
];

function fileOf(spec: TestSpecification): string {
  return spec.moduleId.replaceAll("\\", "/");
}

function group(file: string): number {
  if (CONTAINERS.some((prefix) => file.includes(`/${prefix}`))) return 0;
  return file.includes(`/${BROWSER}`) ? 2 : 1;
}

function rank(file: string): number {
  const at = LONG_FIRST.findIndex((prefix) => file.includes(`/${prefix}`));
  return at === -1 ? LONG_FIRST.length : at;
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const order = await super.sort(files);
    // Array.prototype.sort is stable: within a group and rank, vitest's own order stays.
    return [...order].sort((a, b) => group(fileOf(a)) - group(fileOf(b)) || rank(fileOf(a)) - rank(fileOf(b)));
  }
}
