// The marketplace sync's progress as a bar: repositories read out of those known so far (the
// total grows as each registry's list is read), indeterminate while queued or before any
// registry was reached, full when the run ended. Pure, tested beside it.
import type { RouterOutputs } from "../api/client";
import { counted } from "../../../src/lib/plural";

export type SyncProgress = RouterOutputs["marketplaceStore"]["sync"]["progress"];

export const PROGRESS_URL = "/api/v1/marketplace-store/sync/progress";

export interface ProgressView {
  /** null: indeterminate */
  value: number | null;
  max: number;
  active: boolean;
  /** one line for people (and the bar's aria-valuetext) */
  text: string;
}

export function progressView(p: SyncProgress): ProgressView {
  const counts = `${p.tagsRead} ${p.tagsRead === 1 ? "tag" : "tags"} read, ${p.applicationsFound} found, ${p.skipped} skipped`;
  switch (p.state) {
    case "idle":
      return { value: null, max: 0, active: false, text: "No sync running" };
    case "queued":
      return { value: null, max: 0, active: true, text: "Queued: the sync starts shortly" };
    case "running": {
      const where = p.currentRepository ? ` · reading ${p.currentRegistry ?? ""} ${p.currentRepository}`.replace("  ", " ") : "";
      if (p.repositoriesTotal === 0) return { value: null, max: 0, active: true, text: `Starting: reading the registry lists${where}` };
      return {
        value: Math.min(p.repositoriesDone, p.repositoriesTotal),
        max: p.repositoriesTotal,
        active: true,
        text: `${p.repositoriesDone} of ${counted(p.repositoriesTotal, "repository", "repositories")} read${where}; ${counts}`,
      };
    }
    case "succeeded":
    case "failed": {
      const max = Math.max(p.repositoriesTotal, p.repositoriesDone);
      const imported = `${p.applicationsImported} imported, ${p.applicationsUpdated} updated`;
      return {
        value: max,
        max,
        active: false,
        text: `${p.state === "succeeded" ? "Finished" : "Failed"}: ${p.repositoriesDone} ${p.repositoriesDone === 1 ? "repository" : "repositories"} read, ${imported}, ${p.skipped} skipped, ${p.errors} ${p.errors === 1 ? "error" : "errors"}`,
      };
    }
  }
}

/** Outcome counts of a run's per-product breakdown, in a fixed order. */
export function outcomeCounts(products: { outcome: "imported" | "updated" | "unchanged" | "skipped" }[]) {
  const counts = { imported: 0, updated: 0, unchanged: 0, skipped: 0 };
  for (const p of products) counts[p.outcome] += 1;
  return counts;
}
