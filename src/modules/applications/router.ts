// The application catalog: /api/v1/applications. The icon is a plain express route
// (src/modules/applications/icon-route.ts): procedures only answer JSON.
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { listDeploymentsUsing } from "./deployments.js";
import {
  applicationDetailOutput,
  applicationIdInput,
  applicationPageOutput,
  categoryPageOutput,
  deletedApplicationOutput,
  deploymentPageOutput,
  listApplicationsInput,
  pagedApplicationIdInput,
  pagedVersionIdInput,
  pagingOnlyInput,
  toApplicationDto,
  toVersionDto,
  vendorPageOutput,
  versionPageOutput,
} from "./schemas.js";
import {
  deleteApplication,
  findApplication,
  findVersion,
  latestVersionFacts,
  listApplications,
  listCategories,
  listVendors,
  listVersions,
  registryNames,
} from "./service.js";
import { pageOf } from "../../lib/paging.js";

const TAG = "Applications";

export const applicationsRouter = router({
  list: protectedProcedure("applications:read")
    .meta({
      openapi: {
        method: "GET", path: "/applications", tags: [TAG], summary: "List the application catalog, newest first",
        description: "Filters: category, vendor, registryId (the registry of the latest version), tag (an exact tag), q (text in key, name or description, or an exact tag).",
      },
    })
    .input(listApplicationsInput)
    .output(applicationPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listApplications(ctx.db, ctx.principal.organizationId, input);
      const [names, facts] = await Promise.all([
        registryNames(ctx.db, ctx.principal.organizationId, page.items.map((a) => a.sourceRegistryId)),
        latestVersionFacts(ctx.db, page.items.map((a) => a.latestVersionId)),
      ]);
      return {
        ...page,
        items: page.items.map((app) => {
          const latest = facts.get(app.latestVersionId ?? "");
          return toApplicationDto(app, latest?.hasIcon ?? false, names, latest?.revision ?? null);
        }),
      };
    }),

  // Static segments before /applications/{id} (trpc-to-openapi takes the first match).
  categories: protectedProcedure("applications:read")
    .meta({ openapi: { method: "GET", path: "/applications/categories", tags: [TAG], summary: "List the categories of the catalog's applications" } })
    .input(pagingOnlyInput)
    .output(categoryPageOutput)
    .query(({ ctx, input }) => listCategories(ctx.db, ctx.principal.organizationId, input)),

  vendors: protectedProcedure("applications:read")
    .meta({ openapi: { method: "GET", path: "/applications/vendors", tags: [TAG], summary: "List the vendors of the catalog's applications" } })
    .input(pagingOnlyInput)
    .output(vendorPageOutput)
    .query(({ ctx, input }) => listVendors(ctx.db, ctx.principal.organizationId, input)),

  get: protectedProcedure("applications:read")
    .meta({
      openapi: {
        method: "GET", path: "/applications/{id}", tags: [TAG], summary: "Get an application",
        description: "With its latest version's deployment profiles, parameters and warnings, and the registry and path it came from.",
      },
    })
    .input(applicationIdInput)
    .output(applicationDetailOutput)
    .query(async ({ ctx, input }) => {
      const organizationId = ctx.principal.organizationId;
      const app = await findApplication(ctx.db, organizationId, input.id);
      const latest = await findVersion(ctx.db, organizationId, app.id, app.latestVersionId ?? "00000000-0000-0000-0000-000000000000");
      const names = await registryNames(ctx.db, organizationId, [app.sourceRegistryId]);
      const version = toVersionDto(latest, names);
      return {
        ...toApplicationDto(app, version.hasIcon, names, latest.sourceRevision),
        profiles: version.profiles,
        parameters: version.parameters,
        warnings: version.warnings,
      };
    }),

  delete: protectedProcedure("applications:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/applications/{id}", tags: [TAG], summary: "Delete an application package with all its versions",
        description: "409 while a deployment uses it. A later sync of a registry that still holds its manifests imports it again.",
      },
      audit: { entity: "application" },
    })
    .input(applicationIdInput)
    .output(deletedApplicationOutput)
    .mutation(({ ctx, input }) => deleteApplication(ctx.db, ctx.principal.organizationId, input.id)),

  versions: protectedProcedure("applications:read")
    .meta({ openapi: { method: "GET", path: "/applications/{id}/versions", tags: [TAG], summary: "List an application's versions, newest SemVer first" } })
    .input(pagedApplicationIdInput)
    .output(versionPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listVersions(ctx.db, ctx.principal.organizationId, input.id, input);
      const names = await registryNames(ctx.db, ctx.principal.organizationId, page.items.map((v) => v.sourceRegistryId));
      return { ...page, items: page.items.map((v) => toVersionDto(v, names)) };
    }),

  deployments: protectedProcedure("applications:read")
    .meta({ openapi: { method: "GET", path: "/applications/{id}/deployments", tags: [TAG], summary: "List the deployments of an application" } })
    .input(pagedApplicationIdInput)
    .output(deploymentPageOutput)
    .query(async ({ ctx, input }) => {
      const organizationId = ctx.principal.organizationId;
      const app = await findApplication(ctx.db, organizationId, input.id);
      const found = await listDeploymentsUsing(ctx.db, { organizationId, applicationId: app.id }, input);
      return pageOf(found.items, found.total, input.offset);
    }),

  versionDeployments: protectedProcedure("applications:read")
    .meta({
      openapi: { method: "GET", path: "/applications/{id}/versions/{versionId}/deployments", tags: [TAG], summary: "List the deployments of one application version" },
    })
    .input(pagedVersionIdInput)
    .output(deploymentPageOutput)
    .query(async ({ ctx, input }) => {
      const organizationId = ctx.principal.organizationId;
      const version = await findVersion(ctx.db, organizationId, input.id, input.versionId);
      const found = await listDeploymentsUsing(ctx.db, { organizationId, applicationId: version.applicationId, versionId: version.id }, input);
      return pageOf(found.items, found.total, input.offset);
    }),
});
