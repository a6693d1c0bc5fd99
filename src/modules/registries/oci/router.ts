// OCI registries: /api/v1/registries/oci. Spec op 2 (create) exactly as written; the others
// as docs/registries.md describes them.
import { protectedProcedure, router } from "../../../trpc/procedures.js";
import { deletedOutput, idInput, listRegistriesInput } from "../fields.js";
import { checkOciRegistryHealth } from "./health.js";
import {
  createOciRegistryInput,
  healthCheckOutput,
  ociRegistryOutput,
  ociRegistryPageOutput,
  ociSyncHistoryOutput,
  ociSyncRecordOutput,
  syncHistoryInput,
  toOciRegistryDto,
  toOciSyncRecordDto,
  updateOciRegistryInput,
} from "./schemas.js";
import {
  createOciRegistry,
  deleteOciRegistry,
  findOciRegistry,
  listOciRegistries,
  listOciSyncHistory,
  setOciRegistryEnabled,
  updateOciRegistry,
} from "./service.js";
import { syncOciRegistry } from "./sync.js";
import { assertNotManaged } from "../../config/guard.js";

const TAG = "OCI registries";
const audit = { entity: "oci_registry" };

export const ociRegistriesRouter = router({
  list: protectedProcedure("registries:read")
    .meta({ openapi: { method: "GET", path: "/registries/oci", tags: [TAG], summary: "List the organization's OCI registries, newest first" } })
    .input(listRegistriesInput)
    .output(ociRegistryPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listOciRegistries(ctx.db, ctx.principal.organizationId, input);
      return { ...page, items: page.items.map(toOciRegistryDto) };
    }),

  create: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "POST", path: "/registries/oci", tags: [TAG], summary: "Create an OCI registry",
        description:
          "name 2..100 characters, unique in the organization (409 otherwise); description up to 500; url required. " +
          "The credential (BASIC: username:password; TOKEN: the raw token) is encrypted at rest and never returned; responses carry hasCredentials. " +
          "repositories: each <namespace>/<name>; an empty list syncs nothing.",
      },
      successStatus: 201,
      audit,
    })
    .input(createOciRegistryInput)
    .output(ociRegistryOutput)
    .mutation(async ({ ctx, input }) =>
      toOciRegistryDto(await createOciRegistry(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input))),

  get: protectedProcedure("registries:read")
    .meta({ openapi: { method: "GET", path: "/registries/oci/{id}", tags: [TAG], summary: "Get an OCI registry" } })
    .input(idInput)
    .output(ociRegistryOutput)
    .query(async ({ ctx, input }) => toOciRegistryDto(await findOciRegistry(ctx.db, ctx.principal.organizationId, input.id))),

  update: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "PATCH", path: "/registries/oci/{id}", tags: [TAG], summary: "Update an OCI registry",
        description: "Changing the URL resets the health and sync state; pointing a registry with credentials at another server needs the credential again.",
      },
      audit,
    })
    .input(updateOciRegistryInput)
    .output(ociRegistryOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "OciRegistry", ctx.principal.organizationId, input.id, { input, secretFields: ["credential"] });
      return toOciRegistryDto(await updateOciRegistry(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input));
    }),

  delete: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/registries/oci/{id}", tags: [TAG], summary: "Delete an OCI registry",
        description: "Applications already imported stay in the catalog; delete them with DELETE /applications/{id}.",
      },
      audit,
    })
    .input(idInput)
    .output(deletedOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "OciRegistry", ctx.principal.organizationId, input.id);
      const registry = await deleteOciRegistry(ctx.db, ctx.principal.organizationId, input.id);
      return { id: registry.id, deleted: true as const };
    }),

  enable: protectedProcedure("registries:write")
    .meta({ openapi: { method: "POST", path: "/registries/oci/{id}/enable", tags: [TAG], summary: "Enable an OCI registry" }, audit })
    .input(idInput)
    .output(ociRegistryOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "OciRegistry", ctx.principal.organizationId, input.id);
      return toOciRegistryDto(await setOciRegistryEnabled(ctx.db, ctx.principal.organizationId, input.id, true));
    }),

  disable: protectedProcedure("registries:write")
    .meta({ openapi: { method: "POST", path: "/registries/oci/{id}/disable", tags: [TAG], summary: "Disable an OCI registry" }, audit })
    .input(idInput)
    .output(ociRegistryOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "OciRegistry", ctx.principal.organizationId, input.id);
      return toOciRegistryDto(await setOciRegistryEnabled(ctx.db, ctx.principal.organizationId, input.id, false));
    }),

  healthCheck: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "POST", path: "/registries/oci/{id}/health-check", tags: [TAG], summary: "Check an OCI registry now",
        description:
          "GET /v2/ with the configured authentication (including the WWW-Authenticate: Bearer token exchange). " +
          "healthy: 200; unhealthy: unreachable, credential refused or another status; unknown: the check could not be made. " +
          "Sets healthStatus and lastHealthCheck.",
      },
      // Network I/O must not hold a transaction: the check writes its own audit entry (health.ts).
      audit: false,
    })
    .input(idInput)
    .output(healthCheckOutput)
    .mutation(({ ctx, input }) =>
      checkOciRegistryHealth(ctx.services, ctx.principal.organizationId, input.id, { principal: ctx.principal, request: ctx.request })),

  sync: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "POST", path: "/registries/oci/{id}/sync", tags: [TAG], summary: "Sync an OCI registry now",
        description:
          "Reads the tags of every listed repository (an empty list syncs nothing), each tag's manifest by digest, and imports the application packages " +
          "(artifactType application/vnd.margo.app.v1+json or application/vnd.fleet.app.v1+json with a layer application/vnd.margo.app.description.v1+yaml; tag = metadata.version) " +
          "in one transaction. Other tags are skipped with a reason. Answers the run's sync record; a registry that cannot be read answers status failed " +
          "(also kept in lastSyncError). 409 when the registry is disabled or a sync of it is already running; 503 when the catalog cannot be written.",
      },
      // Network I/O must not hold a transaction: the sync writes its own audit entry (sync.ts).
      audit: false,
    })
    .input(idInput)
    .output(ociSyncRecordOutput)
    .mutation(async ({ ctx, input }) =>
      toOciSyncRecordDto(await syncOciRegistry(ctx.services, ctx.principal.organizationId, input.id, { principal: ctx.principal, request: ctx.request }))),

  syncHistory: protectedProcedure("registries:read")
    .meta({ openapi: { method: "GET", path: "/registries/oci/{id}/sync-history", tags: [TAG], summary: "The registry's sync runs, newest first" } })
    .input(syncHistoryInput)
    .output(ociSyncHistoryOutput)
    .query(async ({ ctx, input }) => {
      const page = await listOciSyncHistory(ctx.db, ctx.principal.organizationId, input);
      return { data: page.items.map(toOciSyncRecordDto), total: page.total, hasMore: page.hasMore };
    }),
});
