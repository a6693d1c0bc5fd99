// Git registries: /api/v1/registries/git. Spec ops 6 (get), 7 (enable) and 20 (sync) exactly
// as written; the others as docs/registries.md describes them.
import { protectedProcedure, router } from "../../../trpc/procedures.js";
import { deletedOutput, idInput, listRegistriesInput } from "../fields.js";
import { cacheDirFor, removeCache } from "./repository.js";
import {
  createGitRegistryInput,
  gitRegistryOutput,
  gitRegistryPageOutput,
  syncResultOutput,
  toGitRegistryDto,
  updateGitRegistryInput,
} from "./schemas.js";
import {
  createGitRegistry,
  deleteGitRegistry,
  findGitRegistry,
  listGitRegistries,
  setGitRegistryEnabled,
  updateGitRegistry,
} from "./service.js";
import { syncGitRegistry } from "./sync.js";
import { assertNotManaged } from "../../config/guard.js";

const TAG = "Git registries";
const audit = { entity: "git_registry" };

export const gitRegistriesRouter = router({
  list: protectedProcedure("registries:read")
    .meta({ openapi: { method: "GET", path: "/registries/git", tags: [TAG], summary: "List the organization's Git registries, newest first" } })
    .input(listRegistriesInput)
    .output(gitRegistryPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listGitRegistries(ctx.db, ctx.principal.organizationId, input);
      return { ...page, items: page.items.map(toGitRegistryDto) };
    }),

  create: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "POST", path: "/registries/git", tags: [TAG], summary: "Create a Git registry",
        description: "The credential (BASIC: username:password; TOKEN: the token) is sealed at rest and never returned; responses carry hasCredentials.",
      },
      successStatus: 201,
      audit,
    })
    .input(createGitRegistryInput)
    .output(gitRegistryOutput)
    .mutation(async ({ ctx, input }) =>
      toGitRegistryDto(await createGitRegistry(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input))),

  get: protectedProcedure("registries:read")
    .meta({ openapi: { method: "GET", path: "/registries/git/{id}", tags: [TAG], summary: "Get a Git registry" } })
    .input(idInput)
    .output(gitRegistryOutput)
    .query(async ({ ctx, input }) => toGitRegistryDto(await findGitRegistry(ctx.db, ctx.principal.organizationId, input.id))),

  update: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "PATCH", path: "/registries/git/{id}", tags: [TAG], summary: "Update a Git registry",
        description: "Changing the URL or the branch resets lastSyncAt, lastSyncError and lastSyncCommit. Pointing a registry with credentials at another server needs the credential again.",
      },
      audit,
    })
    .input(updateGitRegistryInput)
    .output(gitRegistryOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "GitRegistry", ctx.principal.organizationId, input.id, { input, secretFields: ["credential"] });
      const { registry, pointsElsewhere } = await updateGitRegistry(ctx.db, ctx.services.secrets, ctx.principal.organizationId, input);
      // The cache is keyed by URL and branch and would be rebuilt anyway; free the space now.
      if (pointsElsewhere) await removeCache(cacheDirFor(ctx.services.config.DATA_DIR, registry.id)).catch(() => undefined);
      return toGitRegistryDto(registry);
    }),

  delete: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/registries/git/{id}", tags: [TAG], summary: "Delete a Git registry",
        description: "Applications already imported stay in the catalog (deployments may use them); delete them with DELETE /applications/{id}.",
      },
      audit,
    })
    .input(idInput)
    .output(deletedOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "GitRegistry", ctx.principal.organizationId, input.id);
      const registry = await deleteGitRegistry(ctx.db, ctx.principal.organizationId, input.id);
      await removeCache(cacheDirFor(ctx.services.config.DATA_DIR, registry.id)).catch(() => undefined);
      return { id: registry.id, deleted: true as const };
    }),

  enable: protectedProcedure("registries:write")
    .meta({ openapi: { method: "POST", path: "/registries/git/{id}/enable", tags: [TAG], summary: "Enable a Git registry" }, audit })
    .input(idInput)
    .output(gitRegistryOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "GitRegistry", ctx.principal.organizationId, input.id);
      return toGitRegistryDto(await setGitRegistryEnabled(ctx.db, ctx.principal.organizationId, input.id, true));
    }),

  disable: protectedProcedure("registries:write")
    .meta({
      openapi: { method: "POST", path: "/registries/git/{id}/disable", tags: [TAG], summary: "Disable a Git registry (no scheduled or manual syncs)" },
      audit,
    })
    .input(idInput)
    .output(gitRegistryOutput)
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "GitRegistry", ctx.principal.organizationId, input.id);
      return toGitRegistryDto(await setGitRegistryEnabled(ctx.db, ctx.principal.organizationId, input.id, false));
    }),

  sync: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "POST", path: "/registries/git/{id}/sync", tags: [TAG], summary: "Sync a Git registry now",
        description:
          "Fetches the branch, reads every app.yaml / margo.yaml below the registry's path and imports the admitted manifests in one transaction. " +
          "A fetch that fails answers success: false with the reason (also kept in lastSyncError). " +
          "409 when the registry is disabled or a sync of it is already running; 503 when the catalog cannot be written.",
      },
      // Network I/O must not hold a transaction: the sync writes its own audit entry in its
      // short import transaction (see sync.ts).
      audit: false,
    })
    .input(idInput)
    .output(syncResultOutput)
    .mutation(({ ctx, input }) =>
      syncGitRegistry(ctx.services, ctx.principal.organizationId, input.id, { principal: ctx.principal, request: ctx.request })),
});
