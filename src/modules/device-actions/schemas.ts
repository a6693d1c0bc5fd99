// /api/v1/device-actions: inputs and answers; and the heartbeat's two small fields (the
// actions a device is handed, and what it reports about them).
import { z } from "zod";
import { ACTION_KINDS, ACTION_STATES, CONFIGURATION_KIND, DEFAULT_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS, OPERATOR_KINDS, REPORTED_STATES } from "./kinds.js";

export const actionKind = z.enum(ACTION_KINDS);
/** The kinds an operator creates (and the agent is handed): a configuration's rollout is a layer's, not the operator's. */
export const operatorKind = z.enum(OPERATOR_KINDS, {
  error: (issue) => issue.input === CONFIGURATION_KIND
    ? `${CONFIGURATION_KIND} is a configuration layer's rollout: PATCH /config-layers/{id} (or POST /config-layers/{id}/rollback) with rollout creates it`
    : undefined,
});
export const actionState = z.enum(ACTION_STATES);

export const createActionInput = z.object({
  deviceId: z.string().uuid(),
  kind: operatorKind,
  deploymentId: z.string().uuid().optional().describe("restart-app, stop-app, start-app: the deployment whose application (compose project) it acts on; the device must run it"),
  reason: z.string().trim().min(1).max(500).optional().describe("why: shown with the action and recorded in the audit trail"),
  expiresInSeconds: z.number().int().min(60).max(MAX_EXPIRY_SECONDS).default(DEFAULT_EXPIRY_SECONDS)
    .describe("the device runs it only within this time; a device that returns later never runs it (default 3600)"),
});

export const listActionsInput = z.object({
  deviceId: z.string().uuid().optional(),
  jobId: z.string().uuid().optional().describe("the actions of one job (/jobs): each device's result"),
  state: z.array(actionState).max(ACTION_STATES.length).optional(),
  kind: z.array(actionKind).max(ACTION_KINDS.length).optional(),
});

export const actionOutput = z.object({
  id: z.string().uuid(),
  deviceId: z.string().uuid(),
  deviceName: z.string(),
  kind: actionKind,
  deploymentId: z.string().uuid().nullable(),
  applicationId: z.string().uuid().nullable(),
  configLayerId: z.string().uuid().nullable().describe("apply-configuration: the configuration layer whose revision the device gets"),
  configRevision: z.number().int().nullable().describe("apply-configuration: the layer's revision; result.revision is the configuration revision (sha256) the device was handed"),
  reason: z.string().nullable(),
  state: actionState,
  message: z.string().nullable().describe("the device's words: a failure's message, what a health check found, why it is deferred"),
  result: z.unknown().nullable(),
  expiresAt: z.string(),
  deliveredAt: z.string().nullable(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  deferredUntil: z.string().nullable().describe("deferred by a lease on the device until this time"),
  deferredBy: z.string().nullable().describe("the application that holds the lease"),
  createdById: z.string().nullable(),
  jobId: z.string().uuid().nullable().describe("the job it belongs to (/jobs), null for an action on one device"),
  batchIndex: z.number().int().nullable().describe("its batch in the job (0: the canary)"),
  heldForBudget: z.boolean().describe("a job's device whose batch was dispatched, waiting (queued) for a place in the job's disruption budget"),
  windowOpensAt: z.string().nullable().describe("a job's device held (pending, not handed over) until its maintenance window opens at this time"),
  createdAt: z.string(),
  bundle: z.object({ sizeBytes: z.number().int(), sha256: z.string(), expiresAt: z.string() }).nullable()
    .describe("diagnostics: the bundle (GET /device-actions/{id}/bundle) and until when it can be downloaded"),
});
export type ActionDto = z.infer<typeof actionOutput>;

/** An action as the heartbeat hands it to the device. */
export const deviceActionEntry = z.object({
  id: z.string().uuid(),
  kind: operatorKind,
  deploymentId: z.string().uuid().nullable(),
  applicationId: z.string().uuid().nullable(),
  expiresAt: z.string(),
});
export type DeviceActionEntry = z.infer<typeof deviceActionEntry>;

/** What a device reports about an action it was handed. */
export const actionReport = z.object({
  id: z.string().uuid(),
  state: z.enum(REPORTED_STATES),
  message: z.string().max(2000).optional(),
  result: z.record(z.string(), z.unknown()).optional().refine((v) => !v || JSON.stringify(v).length <= 16_000, "result: at most 16,000 characters as JSON"),
  deferredUntil: z.string().datetime().optional().describe("with deferred: when the lease ends"),
  deferredBy: z.string().max(200).optional().describe("with deferred: the application holding the lease"),
});
export type ActionReport = z.infer<typeof actionReport>;
