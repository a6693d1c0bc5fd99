// Global OCI registries: /api/v1/global-registries/oci, Super Admin only. Spec op 10 (get)
// exactly as written; the others as docs/registries.md describes them.
import { router, superAdminProcedure } from "../../trpc/procedures.js";
import { deletedOutput, idInput, listRegistriesInput } from "../registries/fields.js";
import {
  createGlobalRegistryInput,
  globalRegistryOutput,
  globalRegistryPageOutput,
  toGlobalRegistryDto,
  updateGlobalRegistryInput,
} from "./schemas.js";
import { createGlobalRegistry, deleteGlobalRegistry, findGlobalRegistry, listGlobalRegistries, updateGlobalRegistry } from "./service.js";

const TAG = "Global OCI registries";
const audit = { entity: "global_oci_registry" };

export const globalRegistriesRouter = router({
  oci: router({
    list: superAdminProcedure
      .meta({ openapi: { method: "GET", path: "/global-registries/oci", tags: [TAG], summary: "List the global OCI registries in priority order (Super Admin)" } })
      .input(listRegistriesInput)
      .output(globalRegistryPageOutput)
      .query(async ({ ctx, input }) => {
        const page = await listGlobalRegistries(ctx.db, input);
        return { ...page, items: page.items.map(toGlobalRegistryDto) };
      }),

    create: superAdminProcedure
      .meta({
        openapi: {
          method: "POST", path: "/global-registries/oci", tags: [TAG], summary: "Create a global OCI registry (Super Admin)",
          description: "The OCI registry's rules (name unique on the platform, 409 otherwise), plus mandatory (default false) and priority (default 0, ascending). The credential is encrypted at rest and never returned.",
        },
        successStatus: 201,
        audit,
      })
      .input(createGlobalRegistryInput)
      .output(globalRegistryOutput)
      .mutation(async ({ ctx, input }) => toGlobalRegistryDto(await createGlobalRegistry(ctx.db, ctx.services.secrets, input))),

    get: superAdminProcedure
      .meta({ openapi: { method: "GET", path: "/global-registries/oci/{id}", tags: [TAG], summary: "Get a global OCI registry (Super Admin)" } })
      .input(idInput)
      .output(globalRegistryOutput)
      .query(async ({ ctx, input }) => toGlobalRegistryDto(await findGlobalRegistry(ctx.db, input.id))),

    update: superAdminProcedure
      .meta({ openapi: { method: "PATCH", path: "/global-registries/oci/{id}", tags: [TAG], summary: "Update a global OCI registry (Super Admin)" }, audit })
      .input(updateGlobalRegistryInput)
      .output(globalRegistryOutput)
      .mutation(async ({ ctx, input }) => toGlobalRegistryDto(await updateGlobalRegistry(ctx.db, ctx.services.secrets, input))),

    delete: superAdminProcedure
      .meta({ openapi: { method: "DELETE", path: "/global-registries/oci/{id}", tags: [TAG], summary: "Delete a global OCI registry (Super Admin)" }, audit })
      .input(idInput)
      .output(deletedOutput)
      .mutation(async ({ ctx, input }) => {
        const registry = await deleteGlobalRegistry(ctx.db, input.id);
        return { id: registry.id, deleted: true as const };
      }),
  }),
});
