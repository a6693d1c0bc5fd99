// /api/v1/deployments: deployments, their staged rollouts and the removal they ask of devices.
// Literal paths (stats, awaiting-removal) come before /deployments/{id}.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { changedFields } from "../../trpc/audit.js";
import { eventsOf } from "./events.js";
import { rolloutRouter } from "./rollout-router.js";
import {
  awaitingRemovalInput, awaitingRemovalOutput, createDeploymentInput, deploymentDevicesInput, deploymentDevicesOutput, deleteInput, deleteOutput, deploymentOutput, deploymentPageOutput,
  deviceDeploymentsInput, deviceDeploymentsOutput,
  idInput, listDeploymentsInput, removalStatusInput, removalStatusOutput, secretParametersInput, statsOutput, stopInput, updateDeploymentInput,
} from "./schemas.js";
import {
  createDeployment, deleteDeployment, deploymentDto, deploymentStats, getDeployment, listAwaitingRemoval, listDeploymentDevices, listDeployments, listDeviceDeployments, removalStatus,
  setSecretParameters, startDeployment, stopDeployment, updateDeployment,
} from "./service.js";
import { assertNotManaged } from "../config/guard.js";

export const TAG = "Deployments";
const audit = { entity: "deployment" };

export const deploymentsRouter = router({
  list: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/deployments", tags: [TAG],
        summary: "List deployments, newest first",
        description: "Filters: status, rolloutState, state (the one computed state), inProgress (rolling_out, awaiting_approval or paused), applicationId, search (part of the name). Each item carries its state and its devices by state (progress).",
      },
    })
    .input(listDeploymentsInput)
    .output(deploymentPageOutput)
    .query(({ ctx, input }) => listDeployments(ctx.db, ctx.principal.organizationId, input)),

  create: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "POST", path: "/deployments", tags: [TAG],
        summary: "Create a deployment (draft)",
        description:
          "One application version (applicationId + version) with one of its admitted profiles (profileId) and parameter values, on a target " +
          "({ labelSelector } or { deviceIds }), with a strategy ({ type: all-at-once } or { type: staged, canary, batches, successThreshold, " +
          "failureThreshold, autoAdvance, batchTimeoutSeconds }). Parameters are checked against the manifest's declarations; secret ones " +
          "are stored encrypted and shown as ********. 400 names the field; 409 when the name is taken. Nothing reaches a device before start.",
      },
      successStatus: 201,
      audit,
    })
    .input(createDeploymentInput)
    .output(deploymentOutput)
    .mutation(async ({ ctx, input }) => {
      const created = await createDeployment(ctx.db, ctx.services.secrets, ctx.principal.organizationId, ctx.principal.userId, input);
      ctx.audit!.changes = { ...input, parameters: Object.keys(input.parameters) };
      return created;
    }),

  stats: protectedProcedure("deployments:read")
    .meta({ openapi: { method: "GET", path: "/deployments/stats", tags: [TAG], summary: "Deployments by status and rollout state, and their devices by state" } })
    .input(z.object({}))
    .output(statsOutput)
    .query(({ ctx }) => deploymentStats(ctx.db, ctx.principal.organizationId)),

  awaitingRemoval: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/deployments/awaiting-removal", tags: [TAG],
        summary: "Deployments stopped or deleted that wait for their devices to confirm the removal",
      },
    })
    .input(awaitingRemovalInput)
    .output(awaitingRemovalOutput)
    .query(({ ctx, input }) => listAwaitingRemoval(ctx.db, ctx.principal.organizationId, input)),

  get: protectedProcedure("deployments:read")
    .meta({ openapi: { method: "GET", path: "/deployments/{id}", tags: [TAG], summary: "Get a deployment with its devices by state" } })
    .input(idInput)
    .output(deploymentOutput)
    .query(({ ctx, input }) => getDeployment(ctx.db, ctx.principal.organizationId, input.id)),

  update: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "PATCH", path: "/deployments/{id}", tags: [TAG],
        summary: "Update a deployment; a running one is upgraded in place by an update rollout",
        description:
          "Draft or stopped: any field; a change discards a planned (initialized) rollout. Running: a new version, profileId or parameters " +
          "start an update rollout of the new revision to the deployment's devices under its own strategy and options (staged: canary first); " +
          "devices not reached yet keep the old version, held by a predecessor deployment (upgradedToId) that ends when the update reached " +
          "them all. name and description change freely; a changed target, strategy or rollout option is 409 naming the field, and so is a " +
          "version change while a staged rollout is in flight (naming its state: wait, or abort it first). 409 while it waits for a removal.",
      },
      audit,
    })
    .input(updateDeploymentInput)
    .output(deploymentOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "Deployment", ctx.principal.organizationId, input.id);
      const { before, after } = await updateDeployment(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input, eventsOf(ctx));
      ctx.audit!.changes = changedFields(
        { name: before.name, description: before.description, version: before.version, profileId: before.profileId, strategy: before.strategy },
        { name: after.name, description: after.description, version: after.version, profileId: after.profileId, strategy: after.strategy },
      );
      return after;
    }),

  secretParameters: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "POST", path: "/deployments/{id}/secret-parameters", tags: [TAG],
        summary: "Set secret parameter values (also of a deployment managed as code)",
        description:
          "Merges the values into the stored secret ones; only parameters the version declares secret (400 naming another). Documents never " +
          "hold secrets, so this stays open for a deployment managed as code: a Deployment declared without its required secret is a draft " +
          "'pending secret' that cannot start until they are set here. A running deployment rolls the new values out by an update rollout.",
      },
      audit,
    })
    .input(secretParametersInput)
    .output(deploymentOutput)
    .mutation(async ({ ctx, input }) => {
      const after = await setSecretParameters(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input.id, input.parameters, eventsOf(ctx));
      ctx.audit!.changes = { parameters: Object.keys(input.parameters) }; // the names only, as create records them
      return after;
    }),

  delete: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/deployments/{id}", tags: [TAG],
        summary: "Delete a deployment",
        description:
          "A draft or stopped deployment goes at once. A running one asks its devices to remove the application and is deleted when all " +
          "confirmed (deleted: false, status: deleting until then); force=true deletes at once without waiting.",
      },
      audit,
    })
    .input(deleteInput)
    .output(deleteOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "Deployment", ctx.principal.organizationId, input.id);
      return deleteDeployment(ctx.db, ctx.principal.organizationId, input.id, input.force, eventsOf(ctx));
    }),

  start: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "POST", path: "/deployments/{id}/start", tags: [TAG],
        summary: "Start a deployment",
        description:
          "all-at-once: every eligible targeted device gets it in its desired state. staged: initializes the rollout when needed and " +
          "dispatches the canary. Devices whose architecture the profile does not support are skipped. 409 when it is not draft or stopped, " +
          "or when no targeted device is eligible.",
      },
      audit,
    })
    .input(idInput)
    .output(deploymentOutput)
    .mutation(async ({ ctx, input }) => deploymentDto(ctx.db, await startDeployment(ctx.db, ctx.principal.organizationId, input.id, eventsOf(ctx)))),

  stop: protectedProcedure("deployments:write")
    .meta({
      openapi: {
        method: "POST", path: "/deployments/{id}/stop", tags: [TAG],
        summary: "Stop a deployment: its devices remove the application",
        description:
          "A staged rollout in flight is aborted. The deployment is stopping until every device confirmed the removal (see removal-status), " +
          "then stopped; force: true (or a second stop with force) finishes at once.",
      },
      audit,
      mcp: { destructive: true },
    })
    .input(stopInput)
    .output(deploymentOutput)
    .mutation(async ({ ctx, input }) => deploymentDto(ctx.db, await stopDeployment(ctx.db, ctx.principal.organizationId, input.id, input.force, eventsOf(ctx)))),

  devices: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/deployments/{id}/devices", tags: [TAG],
        summary: "The deployment's devices with their state, the agent's message and why the service skipped or cancelled them",
        description: "Filters: state, batch (0 = canary). Most recently changed first.",
      },
    })
    .input(deploymentDevicesInput)
    .output(deploymentDevicesOutput)
    .query(({ ctx, input }) => listDeploymentDevices(ctx.db, ctx.principal.organizationId, input)),

  removalStatus: protectedProcedure("deployments:read")
    .meta({ openapi: { method: "GET", path: "/deployments/{id}/removal-status", tags: [TAG], summary: "Which devices confirmed the removal, unconfirmed first" } })
    .input(removalStatusInput)
    .output(removalStatusOutput)
    .query(({ ctx, input }) => removalStatus(ctx.db, ctx.principal.organizationId, input.id, input)),

  ofDevice: protectedProcedure("deployments:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/deployments", tags: [TAG],
        summary: "The deployments that target a device: its desired state first, then the entries it no longer carries",
        description:
          "One item per deployment that targeted the device, with the application, version and profile, what the heartbeat tells the device " +
          "(desiredAction install or remove; null when nothing), its state, the agent's message and why the service skipped, cancelled or " +
          "superseded it. Entries of the desired state come first, then the most recently changed. Filter: desired=true|false. Paged.",
      },
    })
    .input(deviceDeploymentsInput)
    .output(deviceDeploymentsOutput)
    .query(({ ctx, input }) => listDeviceDeployments(ctx.db, ctx.principal.organizationId, input)),

  rollout: rolloutRouter,
});
