// /organizations/{orgId}/api-keys: spec op 9 (create), op 15 (get) and the list, update
// (PUT) and revoke (DELETE) paths, and rotate (ours: the new key and the old one's end in
// one transaction). The folder is named after the resource; the REST paths
// start with /organizations because keys belong to one.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { organizationOfPath } from "../members/organization-scope.js";
import { apiKeyListItemOutput, apiKeyOutput, createApiKeyInput, createdApiKeyOutput, rotateApiKeyInput, rotatedApiKeyOutput, toApiKeyDto, toReplacedKeyDto, updateApiKeyInput } from "./schemas.js";
import { createApiKey, creatorsOf, getApiKey, listApiKeys, replacedKeysOf, revokeApiKey, rotateApiKey, updateApiKey } from "./service.js";

const TAG = "API keys";
const orgPath = z.object({ orgId: z.string().uuid() });
const keyPath = orgPath.extend({ id: z.string().uuid() });

export const apiKeysRouter = router({
  list: protectedProcedure("api-keys:read")
    .meta({ openapi: { method: "GET", path: "/organizations/{orgId}/api-keys", tags: [TAG], summary: "List API keys (never the keys themselves)" } })
    .input(orgPath.extend(pagingInput))
    .output(pageOutput(apiKeyListItemOutput))
    .query(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      const { items, total } = await listApiKeys(ctx.db, org.id, input);
      const [creators, replaced] = await Promise.all([creatorsOf(ctx.db, items), replacedKeysOf(ctx.db, org.id, items)]);
      const withCreator = items.map((row) => {
        const creator = row.createdById ? creators.get(row.createdById) : undefined;
        const replaces = replaced.get(row.id);
        return { ...toApiKeyDto(row), ...(creator ? { creator } : {}), ...(replaces ? { replaces: toReplacedKeyDto(replaces) } : {}) };
      });
      return pageOf(withCreator, total, input.offset);
    }),

  create: protectedProcedure("api-keys:write")
    .meta({
      openapi: { method: "POST", path: "/organizations/{orgId}/api-keys", tags: [TAG], summary: "Create an API key; the full key is in this response only" },
      successStatus: 201,
      audit: { entity: "api_key" },
    })
    .input(createApiKeyInput)
    .output(createdApiKeyOutput)
    .mutation(async ({ ctx, input: { orgId, ...fields } }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, orgId, ctx.audit);
      const { row, key } = await createApiKey(ctx.db, ctx.principal, org.id, fields, ctx.audit);
      return { ...toApiKeyDto(row), key };
    }),

  get: protectedProcedure("api-keys:read")
    .meta({ openapi: { method: "GET", path: "/organizations/{orgId}/api-keys/{id}", tags: [TAG], summary: "Get an API key (without the key)" } })
    .input(keyPath)
    .output(apiKeyListItemOutput.omit({ creator: true }))
    .query(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      const row = await getApiKey(ctx.db, org.id, input.id);
      const replaces = (await replacedKeysOf(ctx.db, org.id, [row])).get(row.id);
      return { ...toApiKeyDto(row), ...(replaces ? { replaces: toReplacedKeyDto(replaces) } : {}) };
    }),

  update: protectedProcedure("api-keys:write")
    .meta({
      openapi: { method: "PUT", path: "/organizations/{orgId}/api-keys/{id}", tags: [TAG], summary: "Update an API key's name, description, permissions or expiry" },
      audit: { entity: "api_key" },
    })
    .input(updateApiKeyInput)
    .output(apiKeyOutput)
    .mutation(async ({ ctx, input: { orgId, id, ...changes } }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, orgId, ctx.audit);
      return toApiKeyDto(await updateApiKey(ctx.db, ctx.principal, org.id, id, changes, ctx.audit));
    }),

  revoke: protectedProcedure("api-keys:write")
    .meta({
      openapi: { method: "DELETE", path: "/organizations/{orgId}/api-keys/{id}", tags: [TAG], summary: "Revoke an API key (it answers 401 from then on)" },
      audit: { entity: "api_key", action: "api-keys.revoke" },
    })
    .input(keyPath)
    .output(z.object({ id: z.string().uuid(), revoked: z.literal(true), revokedAt: z.string().datetime() }))
    .mutation(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId, ctx.audit);
      return revokeApiKey(ctx.db, org.id, input.id, ctx.audit);
    }),

  rotate: protectedProcedure("api-keys:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/organizations/{orgId}/api-keys/{id}/rotate",
        tags: [TAG],
        summary: "Rotate an API key: a new key like it (name, description, permissions, expiry), and the old one revoked at once or after graceSeconds; the full key is in this response only",
      },
      successStatus: 201,
      audit: { entity: "api_key", action: "api-keys.rotate" },
    })
    .input(rotateApiKeyInput)
    .output(rotatedApiKeyOutput)
    .mutation(async ({ ctx, input: { orgId, id, ...options } }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, orgId, ctx.audit);
      const { row, key, replaced } = await rotateApiKey(ctx.db, ctx.principal, org.id, id, options, ctx.audit);
      return { ...toApiKeyDto(row), key, replaced };
    }),
});
