import { describe, expect, it } from "vitest";
import { outcomeCounts, progressView, type SyncProgress } from "./progress";

const base: SyncProgress = {
  storeId: "s", state: "idle", jobId: null, triggeredBy: null, startedAt: null, finishedAt: null, registriesTotal: 2, currentRegistry: null,
  currentRepository: null, repositoriesDone: 0, repositoriesTotal: 0, tagsRead: 0, applicationsFound: 0, applicationsImported: 0,
  applicationsUpdated: 0, skipped: 0, errors: 0, syncRecordId: null, updatedAt: "2026-01-01T00:00:00.000Z",
};

describe("the marketplace sync progress bar", () => {
  it("is indeterminate while queued and before a registry list is read", () => {
    expect(progressView({ ...base, state: "queued" })).toMatchObject({ value: null, active: true });
    expect(progressView({ ...base, state: "running" })).toMatchObject({ value: null, active: true });
    expect(progressView(base)).toMatchObject({ value: null, active: false, text: "No sync running" });
  });

  it("measures repositories read against those known, naming the one being read", () => {
    const view = progressView({ ...base, state: "running", repositoriesDone: 2, repositoriesTotal: 5, tagsRead: 7, applicationsFound: 3, skipped: 1, currentRegistry: "Vendor", currentRepository: "edge/vision" });
    expect(view).toEqual({ value: 2, max: 5, active: true, text: "2 of 5 repositories read · reading Vendor edge/vision; 7 tags read, 3 found, 1 skipped" });
  });

  it("is full when the run ended, with what it did", () => {
    expect(progressView({ ...base, state: "succeeded", repositoriesDone: 4, repositoriesTotal: 4, applicationsImported: 2, applicationsUpdated: 1, skipped: 3 }))
      .toEqual({ value: 4, max: 4, active: false, text: "Finished: 4 repositories read, 2 imported, 1 updated, 3 skipped, 0 errors" });
    expect(progressView({ ...base, state: "failed", repositoriesDone: 1, repositoriesTotal: 0, errors: 1 })).toMatchObject({ value: 1, max: 1, text: expect.stringMatching(/^Failed: 1 repository read.*1 error$/) });
  });

  it("counts a run's products by outcome", () => {
    expect(outcomeCounts([{ outcome: "imported" }, { outcome: "skipped" }, { outcome: "skipped" }, { outcome: "unchanged" }])).toEqual({ imported: 1, updated: 0, unchanged: 1, skipped: 2 });
  });
});
