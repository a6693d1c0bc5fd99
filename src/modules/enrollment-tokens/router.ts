// /api/v1/enrollment-tokens: what administrators hand to devices so that they can enroll.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import {
  createdEnrollmentTokenOutput,
  createEnrollmentTokenInput,
  ENROLLMENT_TOKEN_STATUSES,
  enrollmentTokenOutput,
  toEnrollmentTokenDto,
} from "./schemas.js";
import { createEnrollmentToken, listEnrollmentTokens, revokeEnrollmentToken } from "./service.js";

const TAG = "Enrollment";
const audit = { entity: "enrollment_token" };

export const enrollmentTokensRouter = router({
  list: protectedProcedure("devices:read")
    .meta({ openapi: { method: "GET", path: "/enrollment-tokens", tags: [TAG], summary: "List enrollment tokens (never the secrets), newest first" } })
    .input(z.object({ ...pagingInput, status: z.enum(ENROLLMENT_TOKEN_STATUSES).optional() }))
    .output(pageOutput(enrollmentTokenOutput))
    .query(async ({ ctx, input }) => {
      const { rows, total } = await listEnrollmentTokens(ctx.db, ctx.principal.organizationId, input);
      return pageOf(rows.map(toEnrollmentTokenDto), total, input.offset);
    }),

  create: protectedProcedure("enrollment:write")
    .meta({
      openapi: {
        method: "POST",
        path: "/enrollment-tokens",
        tags: [TAG],
        summary: "Create an enrollment token; the secret is in this response only",
        description: "Devices enroll with it through POST /agent/enroll; its labels are applied to every device it enrolls.",
      },
      successStatus: 201,
      audit,
    })
    .input(createEnrollmentTokenInput)
    .output(createdEnrollmentTokenOutput)
    .mutation(async ({ ctx, input }) => {
      const { row, token } = await createEnrollmentToken(ctx.db, ctx.principal, input);
      return { ...toEnrollmentTokenDto(row), token };
    }),

  revoke: protectedProcedure("enrollment:write")
    .meta({
      openapi: { method: "DELETE", path: "/enrollment-tokens/{id}", tags: [TAG], summary: "Revoke an enrollment token (enrollments with it answer 401 from then on)" },
      audit: { ...audit, action: "enrollment-tokens.revoke" },
    })
    .input(z.object({ id: z.string().uuid() }))
    .output(enrollmentTokenOutput)
    .mutation(async ({ ctx, input }) => toEnrollmentTokenDto(await revokeEnrollmentToken(ctx.db, ctx.principal.organizationId, input.id))),
});
