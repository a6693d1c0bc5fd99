// The order files start in: the longest first, so that no long file starts near the end of a
// phase while the other workers sit idle. vitest orders by the durations of the previous run
// (its cache) and, without one, by file size; but in .ci/run the PostgreSQL phase inherits the
// PGlite phase's durations, where the PostgreSQL-only files were skipped in ~0 s: the Prisma
// CLI's upgrade test (~100 s) then started last and ended the phase alone (CI run of f75a01e:
// the phase took 502 s for 882 s of tests on 2 workers). Files known to be long start first, in
// this order; the rest keep vitest's order.
import { BaseSequencer, type TestSpecification } from "vitest/node";

// (Measured in the CI run of 0a21e47: every file of 30 s or more on either database is named.)
const LONG_FIRST = [
  "test/http/upgrade/prisma-migrate-deploy.test.ts",
  "test/agent/agent-e2e.test.ts",
  "test/http/agent/agent-outage.test.ts",
  "test/browser/app/role-walk.test.ts",
  "test/agent/actions-e2e.test.ts",
  "test/deploy/compose-up.test.ts",
  "test/agent/agent-docker-e2e.test.ts",
  "test/deploy/kubernetes.test.ts",
  "test/fuzz/",
  "test/http/faults/",
  "test/http/operations/",
  "test/browser/app/readme-tour.test.ts",
  "test/browser/app/roles.test.ts",
  "test/agent/runtime.test.ts",
  "test/cli/",
  "test/deploy/",
  "test/agent/",
];

function rank(spec: TestSpecification): number {
  const file = spec.moduleId.replaceAll("\\", "/");
  const at = LONG_FIRST.findIndex((prefix) => file.includes(`/${prefix}`));
  return at === -1 ? LONG_FIRST.length : at;
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const order = await super.sort(files);
    // Array.prototype.sort is stable: within a rank, vitest's own order stays.
    return [...order].sort((a, b) => rank(a) - rank(b));
  }
}
