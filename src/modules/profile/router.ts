// The caller's own account. Reads work with any credential (an API key reads its creator's
// profile); the password and session terminations need the bearer session itself.
import { z } from "zod";
import { authedProcedure, router, sessionProcedure } from "../../trpc/procedures.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { activityFilterFields, activityItemOutput } from "../activity/schemas.js";
import {
  changePasswordInput, changePasswordOutput, notificationPreferences, profileOutput, sessionOutput, updateProfileInput,
} from "./schemas.js";
import {
  changePassword, getNotificationPreferences, getProfile, listSessions, ownActivity, putNotificationPreferences,
  terminateSessions, updateProfile,
} from "./service.js";
import { forgetFirstStart } from "../../first-start.js";

const TAG = "Profile";

export const profileRouter = router({
  get: authedProcedure
    .meta({ openapi: { method: "GET", path: "/profile", tags: [TAG], summary: "The caller's own profile" } })
    .input(z.object({}).optional())
    .output(profileOutput)
    .query(({ ctx }) => getProfile(ctx.db, ctx.principal)),

  update: authedProcedure
    .meta({ openapi: { method: "PATCH", path: "/profile", tags: [TAG], summary: "Update the caller's own profile" }, audit: { entity: "user" } })
    .input(updateProfileInput)
    .output(profileOutput)
    .mutation(({ ctx, input }) => updateProfile(ctx.db, ctx.principal, ctx.audit, input)),

  getNotificationPreferences: authedProcedure
    .meta({ openapi: { method: "GET", path: "/profile/notification-preferences", tags: [TAG], summary: "The caller's notification preferences" } })
    .input(z.object({}).optional())
    .output(notificationPreferences)
    .query(({ ctx }) => getNotificationPreferences(ctx.db, ctx.principal)),

  putNotificationPreferences: authedProcedure
    .meta({
      openapi: { method: "PUT", path: "/profile/notification-preferences", tags: [TAG], summary: "Replace the caller's notification preferences (omitted fields take their defaults)" },
      audit: { entity: "user" },
    })
    .input(notificationPreferences)
    .output(notificationPreferences)
    .mutation(({ ctx, input }) => putNotificationPreferences(ctx.db, ctx.principal, ctx.audit, input)),

  changePassword: sessionProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/profile/password",
        tags: [TAG],
        summary: "Change the caller's password",
        description: "Needs the current password and a bearer session. Every other session is signed out and every older access token stops working; the answer carries a new access token for this session (its refresh token keeps working).",
      },
      audit: { entity: "user" },
    })
    .input(changePasswordInput)
    .output(changePasswordOutput)
    .mutation(async ({ ctx, input }) => {
      const changed = await changePassword(ctx.services, ctx.db, ctx.principal, ctx.audit, input);
      // The first start's generated password is void now: its kept copy goes (src/first-start.ts).
      ctx.afterCommit(() => forgetFirstStart(ctx.services.config.DATA_DIR, ctx.principal.userId));
      return changed;
    }),

  sessions: authedProcedure
    .meta({ openapi: { method: "GET", path: "/profile/sessions", tags: [TAG], summary: "The caller's open sessions (most recently used first)" } })
    .input(z.object(pagingInput))
    .output(pageOutput(sessionOutput))
    .query(({ ctx, input }) => listSessions(ctx.db, ctx.principal, input)),

  terminateSessions: sessionProcedure
    .meta({
      openapi: {
        method: "DELETE",
        path: "/profile/sessions",
        tags: [TAG],
        summary: "End one session (?id=) or every other session",
        description: "With `id`, ends that session of the caller (404 if it is not theirs or already ended; the current one may be named: that signs out). Without `id`, ends every session but the current one. Needs a bearer session.",
      },
      audit: { entity: "session" },
    })
    .input(z.object({ id: z.string().uuid().optional() }))
    .output(z.object({ terminated: z.number().int(), currentEnded: z.boolean() }))
    .mutation(({ ctx, input }) => terminateSessions(ctx.db, ctx.principal, ctx.audit, input.id)),

  activity: authedProcedure
    .meta({ openapi: { method: "GET", path: "/profile/activity", tags: [TAG], summary: "The caller's own activity, newest first" } })
    .input(z.object({ ...activityFilterFields, ...pagingInput }))
    .output(pageOutput(activityItemOutput))
    .query(({ ctx, input }) => ownActivity(ctx.db, ctx.principal, input)),
});
