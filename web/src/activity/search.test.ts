import { describe, expect, it } from "vitest";
import { ACTIVITY_TYPES as SERVICE_TYPES } from "../../../src/modules/activity/types";
import { ACTIVITY_TYPES } from "./search";

describe("activity types", () => {
  it("are the service's own", () => {
    expect([...ACTIVITY_TYPES]).toEqual([...SERVICE_TYPES]);
  });
});
