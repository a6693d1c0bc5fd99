// The target form against the API's own schemas: no problem means the API accepts the body,
// and each problem is a field the API refuses.
import { describe, expect, it } from "vitest";
import { createTargetInput, updateTargetInput } from "../../../src/modules/notification-targets/schemas";
import { createBody, EMPTY_TARGET, formOfTarget, targetProblems, updateBody, type Target, type TargetForm } from "./target-form";

const ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const form = (over: Partial<TargetForm>): TargetForm => ({ ...EMPTY_TARGET, name: "Pager", url: "https://hooks.example.com/alerts", ...over });

const cases: Array<[string, Partial<TargetForm>]> = [
  ["webhook", {}],
  ["webhook with secret", { secret: "s".repeat(16) }],
  ["short secret", { secret: "short" }],
  ["long secret", { secret: "s".repeat(257) }],
  ["no url", { url: "" }],
  ["not a url", { url: "hooks" }],
  ["no name", { name: " " }],
  ["slack", { type: "slack", url: "https://hooks.slack.example/T/B/X" }],
  ["email", { type: "email", url: "", recipients: "ops@example.com\noncall@example.org" }],
  ["email comma list", { type: "email", url: "", recipients: "ops@example.com, oncall@example.org" }],
  ["email none", { type: "email", url: "", recipients: "  " }],
  ["email bad", { type: "email", url: "", recipients: "ops@example.com, not-an-address" }],
  ["email too many", { type: "email", url: "", recipients: Array.from({ length: 21 }, (_, i) => `u${i}@example.com`).join(",") }],
];

describe("notification target form", () => {
  it.each(cases)("%s: the form's problems agree with the API's schema", (_, over) => {
    const f = form(over);
    const problems = targetProblems(f, false);
    const parsed = createTargetInput.safeParse(createBody(f));
    if (Object.keys(problems).length === 0) expect(parsed.error?.issues ?? []).toEqual([]);
    else {
      expect(parsed.success).toBe(false);
      const apiFields = parsed.error!.issues.map((i) => String(i.path[0]));
      for (const field of Object.keys(problems)) expect(apiFields).toContain(field);
    }
  });

  it("asks for http(s) where the API would refuse another scheme only when sending", () => {
    expect(targetProblems(form({ url: "ftp://example.com/x" }), false).url).toBe("must be an http(s) URL");
  });

  it("edits without the stored URL and secret: empty keeps them, typed replaces them", () => {
    const stored = { id: ID, name: "Pager", type: "webhook", url: "https://hooks.example.com/alerts", recipients: [], hasSecret: true, enabled: true, managedBy: null, managedCommit: null, createdAt: "", updatedAt: "" } as Target;
    const f = formOfTarget(stored);
    expect(f.url).toBe("");
    expect(f.secret).toBe("");
    expect(targetProblems(f, true)).toEqual({});
    const kept = updateBody(ID, { ...f, enabled: false });
    expect(kept).toEqual({ id: ID, name: "Pager", enabled: false });
    expect(updateTargetInput.safeParse(kept).success).toBe(true);
    const replaced = updateBody(ID, { ...f, url: "https://other.example.com/h", secret: "n".repeat(20) });
    expect(replaced).toMatchObject({ url: "https://other.example.com/h", secret: "n".repeat(20) });
    expect(updateTargetInput.safeParse(replaced).success).toBe(true);
  });
});
