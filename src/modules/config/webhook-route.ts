// POST /api/v1/config-sources/{id}/webhook: a Git host's push notice (docs/config-as-code.md).
// No API key: the request proves itself with the source's webhook secret, in the host's own
// way, over the raw body exactly as sent:
//   GitHub  X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>
//   Gitea   X-Gitea-Signature: <hex HMAC-SHA256 of the body>
//   GitLab  X-Gitlab-Token: <the secret itself> (compared in constant time)
// A verified push to the source's branch asks for a sync (a job, run within seconds) and
// answers 202; a push to another branch, or another event, answers 202 and is ignored;
// anything unverified (no or a wrong signature, an unknown source, one without a secret) is
// 401 and nothing runs. Mounted under /api/v1 after the
// rate limiter, among the plain routes: the request boundary keeps a JSON body's bytes for it.
import crypto from "node:crypto";
import express, { type Request, type Response, type Router } from "express";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import type { Services } from "../../services.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { sendJson, sendRestError } from "../../http/error-response.js";
import { requestInfoOf } from "../../trpc/context.js";
import { rawBodyOf } from "../../http/storable-input.js";
import { safeEqual } from "../../lib/crypto.js";
import { requestSync } from "./jobs.js";

export const CONFIG_WEBHOOK_PATH = "/config-sources/:id/webhook";

type Style = "github" | "gitea" | "gitlab";

const header = (req: Request, name: string) => {
  const value = req.headers[name];
  return typeof value === "string" ? value.trim() : undefined;
};

const hmacHex = (secret: string, body: Buffer) => crypto.createHmac("sha256", secret).update(body).digest("hex");

/** The style the request claims and whether its proof holds; null: it carries none. */
function verify(req: Request, body: Buffer, secret: string): { style: Style; ok: boolean } | null {
  const gitea = header(req, "x-gitea-signature");
  if (gitea !== undefined) return { style: "gitea", ok: safeEqual(gitea.toLowerCase(), hmacHex(secret, body)) };
  const github = header(req, "x-hub-signature-256");
  if (github !== undefined) return { style: "github", ok: safeEqual(github.toLowerCase(), `sha256=${hmacHex(secret, body)}`) };
  const gitlab = header(req, "x-gitlab-token");
  if (gitlab !== undefined) return { style: "gitlab", ok: safeEqual(gitlab, secret) };
  return null;
}

/** The pushed ref of a push event's payload (JSON, or GitHub's form encoding payload=...); null for anything else. */
function pushedRef(req: Request, body: Buffer): string | null {
  const event = header(req, "x-github-event") ?? header(req, "x-gitea-event") ?? header(req, "x-gitlab-event");
  if (event !== undefined && !/^(push|push hook)$/i.test(event)) return null;
  let text = body.toString("utf8");
  if (req.is("application/x-www-form-urlencoded")) text = new URLSearchParams(text).get("payload") ?? "";
  try {
    const ref = (JSON.parse(text) as { ref?: unknown }).ref;
    return typeof ref === "string" ? ref : null;
  } catch {
    return null;
  }
}

const uuid = z.uuid();
const UNVERIFIED = "The webhook's signature is missing or does not match the source's webhook secret";

export function configWebhookRoutes(services: Services): Router {
  // A JSON body was read by the request boundary, which keeps its bytes (req.rawBody); any other is read here.
  const raw = express.raw({ type: () => true, limit: services.config.BODY_LIMIT_BYTES });
  const handler = async (req: Request, res: Response) => {
    const request = requestInfoOf(req);
    const refuse = () => sendRestError(services, res, request, new TRPCError({ code: "UNAUTHORIZED", message: UNVERIFIED }));
    try {
      const body = rawBodyOf(req) ?? (Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
      const id = String(req.params.id);
      // an unknown source, another's, one without a secret: all the same 401 (nothing to learn from it)
      const source = uuid.safeParse(id).success
        ? await services.prisma.configSource.findUnique({ where: { id }, select: { id: true, organizationId: true, branch: true, webhookSecretSealed: true } })
        : null;
      const active = source && (await services.prisma.organization.count({ where: { id: source.organizationId, status: "active" } })) > 0;
      const secret = active && source?.webhookSecretSealed ? services.secrets.decrypt(source.webhookSecretSealed) : null;
      const proof = secret === null ? null : verify(req, body, secret);
      if (!source || !proof?.ok) {
        services.logger.info({ requestId: request.requestId, style: proof?.style ?? null }, "config source webhook refused: not verified");
        return refuse();
      }
      const ref = pushedRef(req, body);
      const wanted = `refs/heads/${source.branch}`;
      if (ref === null) return sendJson(res, 202, { status: "ignored", style: proof.style, message: "not a push event: nothing to sync" });
      if (ref !== wanted) return sendJson(res, 202, { status: "ignored", style: proof.style, message: `a push to ${ref}; the source follows ${wanted}: nothing to sync` });
      await requestSync(services.prisma, source.organizationId, source.id, proof.style);
      sendJson(res, 202, { status: "queued", style: proof.style, message: `a sync of ${wanted} is queued` });
    } catch (err) {
      sendRestError(services, res, request, err);
    }
  };
  const r = express.Router();
  r.post(CONFIG_WEBHOOK_PATH, (req, res, next) => (rawBodyOf(req) ? next() : raw(req, res, next)), (req, res) => void handler(req, res));
  return r;
}

const answer = {
  description: "Verified: queued (a push to the source's branch: a sync runs within seconds) or ignored (another branch or event), saying which",
  content: {
    "application/json": {
      schema: {
        type: "object", required: ["status", "style", "message"],
        properties: { status: { type: "string", enum: ["queued", "ignored"] }, style: { type: "string", enum: ["github", "gitea", "gitlab"] }, message: { type: "string" } },
      },
    },
  },
};

export const configWebhookOpenApiPaths: ExtraPaths = {
  "/config-sources/{id}/webhook": {
    post: {
      operationId: "config-sourceWebhook",
      tags: ["Configuration as code"],
      summary: "A Git host's push notice for a config source (no API key: the host signs it with the source's webhook secret)",
      description:
        "GitHub: X-Hub-Signature-256 (sha256=HMAC-SHA256 of the raw body); Gitea: X-Gitea-Signature (hex HMAC-SHA256); GitLab: X-Gitlab-Token " +
        "(the secret). The secret is made when the source is created and by POST /organizations/{orgId}/config/sources/{id}/webhook-secret. " +
        "docs/config-as-code.md.",
      security: [],
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string", format: "uuid" }, description: "the config source" }],
      requestBody: { required: false, content: { "application/json": { schema: { type: "object", description: "the host's push event (ref: refs/heads/<branch>)" } } } },
      responses: {
        202: answer,
        401: errorResponse("No signature, or one the source's webhook secret does not verify (also for an unknown source)"),
        413: errorResponse("The body is larger than BODY_LIMIT_BYTES"),
      },
    },
  },
};
