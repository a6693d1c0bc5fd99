// /users: platform-level accounts. Reads need users:read (a Super Admin sees everyone, others
// the members of their organization); every change is a Super Admin operation, since one
// account may belong to several tenants. Tenant administrators act on their members through
// /organizations/{id}/users/... instead. Export is a plain express route (src/modules/users/export-route.ts)
// because it answers CSV. Static segments come before /users/{id} (first match wins).
import { z } from "zod";
import { protectedProcedure, publicProcedure, router, superAdminProcedure } from "../../trpc/procedures.js";
import {
  addToOrganizationInput, bulkUsersInput, bulkUsersOutput, completeEmailVerificationInput, completePasswordResetInput,
  createUserInput, idInput, listUsersInput, mailSentOutput, membershipOutput, removeFromOrganizationInput,
  toMembershipDto, toUserDto, updateRoleInput, updateUserInput, userOutput, userPageOutput, userStatsOutput,
} from "./schemas.js";
import {
  clearIdentityLink, createUser, getUser, listUsers, resendVerification, resetPassword, updateUser,
} from "./service.js";
import { changeUser, grantSuperAdmin, revokeSuperAdmin } from "./lifecycle.js";
import { addToOrganization, removeFromOrganization, updateMembershipRole } from "./memberships.js";
import { bulkUsers } from "./bulk.js";
import { userStats } from "./stats.js";
import { completeEmailVerification, completePasswordReset } from "./tokens.js";

const TAG = "Users";
const audit = { entity: "user" };
const read = protectedProcedure("users:read");

export const usersRouter = router({
  list: read
    .meta({ openapi: { method: "GET", path: "/users", tags: [TAG], summary: "List users (Super Admin: all; otherwise members of your organization)" } })
    .input(listUsersInput)
    .output(userPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listUsers(ctx.db, ctx.principal, input);
      return { ...page, items: page.items.map(toUserDto) };
    }),

  create: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users", tags: [TAG], summary: "Create a user (Super Admin)" }, successStatus: 201, audit })
    .input(createUserInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto(await createUser(ctx.db, ctx.services, ctx.principal, input))),

  stats: read
    .meta({ openapi: { method: "GET", path: "/users/stats", tags: [TAG], summary: "User statistics over the users you may see" } })
    .input(z.object({}))
    .output(userStatsOutput)
    .query(({ ctx }) => userStats(ctx.db, ctx.principal)),

  bulk: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/bulk", tags: [TAG], summary: "Enable, disable or delete several users, with an outcome per user (Super Admin)" }, audit, mcp: { destructive: true } })
    .input(bulkUsersInput)
    .output(bulkUsersOutput)
    .mutation(({ ctx, input }) => bulkUsers(ctx.db, ctx.principal, input)),

  completePasswordReset: publicProcedure
    .meta({
      openapi: { method: "POST", path: "/users/password-reset/complete", tags: [TAG], protect: false, summary: "Choose a new password with the one-time code from a reset or welcome mail" },
      audit: false,
    })
    .input(completePasswordResetInput)
    .output(z.object({ userId: z.string().uuid(), passwordChanged: z.literal(true) }))
    .mutation(({ ctx, input }) => completePasswordReset(ctx.services, ctx.request, input.token, input.password)),

  completeEmailVerification: publicProcedure
    .meta({
      openapi: { method: "POST", path: "/users/email-verification/complete", tags: [TAG], protect: false, summary: "Confirm an e-mail address with the one-time code from the verification mail" },
      audit: false,
    })
    .input(completeEmailVerificationInput)
    .output(z.object({ userId: z.string().uuid(), emailVerified: z.literal(true) }))
    .mutation(({ ctx, input }) => completeEmailVerification(ctx.services, ctx.request, input.token)),

  get: read
    .meta({ openapi: { method: "GET", path: "/users/{id}", tags: [TAG], summary: "Get a user" } })
    .input(idInput)
    .output(userOutput)
    .query(async ({ ctx, input }) => toUserDto(await getUser(ctx.db, ctx.principal, input.id))),

  update: superAdminProcedure
    .meta({ openapi: { method: "PATCH", path: "/users/{id}", tags: [TAG], summary: "Update a user's name or e-mail (Super Admin)" }, audit })
    .input(updateUserInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto(await updateUser(ctx.db, ctx.services, ctx.principal, input))),

  delete: superAdminProcedure
    .meta({ openapi: { method: "DELETE", path: "/users/{id}", tags: [TAG], summary: "Delete a user (Super Admin; never yourself, the last Super Admin or an organization's last owner)" }, audit })
    .input(idInput)
    .output(z.object({ id: z.string().uuid(), deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await changeUser(ctx.db, ctx.principal, input.id, "delete");
      return { id: input.id, deleted: true as const };
    }),

  addToOrganization: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/{id}/organizations", tags: [TAG], summary: "Make the user a member of an organization with a role (Super Admin)" }, successStatus: 201, audit })
    .input(addToOrganizationInput)
    .output(membershipOutput)
    .mutation(async ({ ctx, input }) => toMembershipDto(await addToOrganization(ctx.db, ctx.principal, input))),

  removeFromOrganization: superAdminProcedure
    .meta({ openapi: { method: "DELETE", path: "/users/{id}/organizations/{orgId}", tags: [TAG], summary: "Remove the user from an organization (Super Admin; never its last owner)" }, audit })
    .input(removeFromOrganizationInput)
    .output(z.object({ userId: z.string().uuid(), organizationId: z.string().uuid(), removed: z.literal(true) }))
    .mutation(({ ctx, input }) => removeFromOrganization(ctx.db, ctx.principal, input.id, input.orgId)),

  resendVerification: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/{id}/resend-verification", tags: [TAG], summary: "Send a new e-mail verification link (Super Admin)" }, audit })
    .input(idInput)
    .output(mailSentOutput)
    .mutation(({ ctx, input }) => resendVerification(ctx.db, ctx.services, ctx.principal, input.id)),

  clearIdentityLink: superAdminProcedure
    .meta({ openapi: { method: "DELETE", path: "/users/{id}/identity-link", tags: [TAG], summary: "Unlink the user's federated identity (Super Admin)" }, audit })
    .input(idInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto(await clearIdentityLink(ctx.db, ctx.principal, input.id))),

  updateRole: superAdminProcedure
    .meta({ openapi: { method: "PUT", path: "/users/{id}/role", tags: [TAG], summary: "Change the user's role in an organization (Super Admin)" }, audit })
    .input(updateRoleInput)
    .output(membershipOutput)
    .mutation(async ({ ctx, input }) => toMembershipDto(await updateMembershipRole(ctx.db, ctx.principal, input))),

  enable: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/{id}/enable", tags: [TAG], summary: "Enable a disabled user (Super Admin)" }, audit })
    .input(idInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto((await changeUser(ctx.db, ctx.principal, input.id, "enable"))!)),

  disable: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/{id}/disable", tags: [TAG], summary: "Disable a user: their sessions and API keys stop at once (Super Admin)" }, audit })
    .input(idInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto((await changeUser(ctx.db, ctx.principal, input.id, "disable"))!)),

  resetPassword: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/{id}/reset-password", tags: [TAG], summary: "Mail the user a one-time password reset link (Super Admin)" }, audit })
    .input(idInput)
    .output(mailSentOutput)
    .mutation(({ ctx, input }) => resetPassword(ctx.db, ctx.services, ctx.principal, input.id)),

  grantSuperuser: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/users/{id}/superuser", tags: [TAG], summary: "Make the user a Super Admin (Super Admin)" }, audit })
    .input(idInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto(await grantSuperAdmin(ctx.db, ctx.principal, input.id))),

  revokeSuperuser: superAdminProcedure
    .meta({ openapi: { method: "DELETE", path: "/users/{id}/superuser", tags: [TAG], summary: "Take Super Admin away from the user (never the last active one)" }, audit })
    .input(idInput)
    .output(userOutput)
    .mutation(async ({ ctx, input }) => toUserDto(await revokeSuperAdmin(ctx.db, ctx.principal, input.id))),
});
