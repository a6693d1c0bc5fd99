// Backpressure on device ingest (docs/telemetry.md, "When ingest is busy"). The procedures
// marked `meta.ingest` (the agent's telemetry and log batches) take a turn of the process's
// ingest gate (services.ingestGate, src/lib/admission.ts) before anything reads their body:
// INGEST_CONCURRENCY batches are worked on at once, INGEST_QUEUE_LENGTH more wait with their
// bodies unread (in the socket, not in memory). A batch that finds the queue full, or waits
// longer than INGEST_QUEUE_TIMEOUT_MS (the database is slow: the batches in front of it do not
// finish), is refused at once: 503 SERVICE_UNAVAILABLE with `Retry-After` (seconds, with
// jitter), in the surface's usual error shape, and nothing of it is stored. An admitted batch
// keeps its turn until its answer is written, and is answered 2xx only once stored.
//
// Mounted on /api/v1 and /trpc after the rate limiter and before the request boundary, which
// reads the body (src/app.ts).
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../services.js";
import type { Meta } from "../trpc/init.js";
import { requestInfoOf } from "../trpc/context.js";
import { retryAfterWithJitter, type RefusalReason } from "../lib/admission.js";
import { DeclaredOperations } from "./declared-operations.js";
import { sendRestError, sendTrpcError } from "./error-response.js";

function busyMessage(reason: RefusalReason, services: Services, retryAfterSeconds: number): string {
  const { INGEST_QUEUE_LENGTH, INGEST_QUEUE_TIMEOUT_MS } = services.config;
  const why = reason === "queue-full"
    ? `${INGEST_QUEUE_LENGTH} batches are already waiting`
    : `the database is not keeping up (waited ${INGEST_QUEUE_TIMEOUT_MS} ms for a turn)`;
  return `Ingest is busy: ${why}; keep the batch and retry after ${retryAfterSeconds} s`;
}

export function ingestAdmission(services: Services, procedures: [string, Meta][]): RequestHandler {
  const ingest = new DeclaredOperations(procedures, (meta) => meta.ingest);
  const gate = services.ingestGate;
  return async (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== "POST" || ingest.of(req).length === 0) return next();
    // The client hanging up gives its place in the queue, or its turn, to the next batch. An
    // admitted batch whose client left may still be writing: the turn is released early then,
    // by at most the requests whose clients gave up.
    const left = new AbortController();
    res.once("close", () => left.abort());
    const admission = await gate.enter(left.signal);
    if (admission.admitted) {
      if (left.signal.aborted) admission.release();
      else left.signal.addEventListener("abort", admission.release, { once: true });
      return next();
    }
    if (admission.reason === "abandoned") return;
    const retryAfter = retryAfterWithJitter(services.config.INGEST_RETRY_AFTER_SECONDS);
    const error = new TRPCError({ code: "SERVICE_UNAVAILABLE", message: busyMessage(admission.reason, services, retryAfter) });
    res.setHeader("Retry-After", String(retryAfter));
    if (req.baseUrl === "/trpc") sendTrpcError(services, req, res, requestInfoOf(req), () => error);
    else sendRestError(services, res, requestInfoOf(req), error);
  };
}
