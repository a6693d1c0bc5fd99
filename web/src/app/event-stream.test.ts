import { describe, expect, it } from "vitest";
import { TRPCClientError } from "@trpc/client";
import { afterFailure, parseEventData, stopsStream } from "./event-stream";

const refused = (httpStatus: number) => new TRPCClientError("refused", { result: { error: { data: { httpStatus } } } } as never);

describe("event streams", () => {
  it("parse an event's JSON and skip one that is not JSON", () => {
    expect(parseEventData('{"id":"1"}')).toEqual({ id: "1" });
    expect(parseEventData("not json")).toBeUndefined();
    expect(parseEventData("")).toBeUndefined();
    expect(parseEventData(undefined)).toBeUndefined();
  });

  it("stop for good on 401, 403 and 404, with the error", () => {
    for (const status of [401, 403, 404]) {
      const error = refused(status);
      expect(stopsStream(error)).toBe(true);
      expect(afterFailure(0, error)).toEqual({ next: { state: "stopped", error }, waitMs: null });
    }
  });

  it("retry anything else with the realtime back-off, saying when", () => {
    expect(stopsStream(refused(500))).toBe(false);
    expect(stopsStream(new Error("offline"))).toBe(false);
    expect(afterFailure(0, undefined, 1)).toEqual({ next: { state: "reconnecting", retryInSeconds: 1 }, waitMs: 1000 });
    expect(afterFailure(3, refused(503), 1)).toEqual({ next: { state: "reconnecting", retryInSeconds: 8 }, waitMs: 8000 });
    expect(afterFailure(10, undefined, 1).waitMs).toBe(30_000);
  });
});
