// Federated sign-in: an ID token of the configured OpenID Connect provider, verified with
// jose against the provider's JWKS (fetched and cached by createRemoteJWKSet), becomes one
// of our sessions. The user is found by (issuer, subject), else linked by a provider-verified
// e-mail, else created; the groups of the token are kept and the group mappings applied
// (userOfIdToken, shared with the console's browser sign-in in ./browser-sign-in.ts).
import { TRPCError } from "@trpc/server";
import { createRemoteJWKSet, errors as jose, jwtVerify, type JWTPayload } from "jose";
import type { Config } from "../../config.js";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { writeAudit } from "../../trpc/audit.js";
import { badRequest, conflict, notFound, unauthorized, unavailable } from "../../trpc/errors.js";
import { startSession, type TokenPair } from "../auth/service.js";
import { reconcileMappings } from "./reconcile.js";

interface OidcSettings {
  issuer: string;
  jwksUrl: string;
  audience: string;
}

function oidcSettings(config: Config): OidcSettings | null {
  if (!config.OIDC_ISSUER || !config.OIDC_JWKS_URL || !config.OIDC_AUDIENCE) return null;
  return { issuer: config.OIDC_ISSUER, jwksUrl: config.OIDC_JWKS_URL, audience: config.OIDC_AUDIENCE };
}

// One key set per JWKS URL for the life of the process: jose caches the keys and refetches
// when a token names a key id it has not seen (key rotation), at most every 30 s.
const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
function keySetOf(url: string) {
  let set = keySets.get(url);
  if (!set) keySets.set(url, (set = createRemoteJWKSet(new URL(url), { timeoutDuration: 5000 })));
  return set;
}

const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

class TokenRefused extends Error {}

async function verifyIdToken(settings: OidcSettings, idToken: string): Promise<JWTPayload & { sub: string }> {
  try {
    const { payload } = await jwtVerify(idToken, keySetOf(settings.jwksUrl), {
      issuer: settings.issuer,
      audience: settings.audience,
      algorithms: ALGORITHMS,
      clockTolerance: 30,
      requiredClaims: ["sub", "exp", "iat"],
    });
    return payload as JWTPayload & { sub: string };
  } catch (err) {
    // A provider we cannot reach is not the caller's fault: 503, not 401.
    if (err instanceof jose.JWKSTimeout || err instanceof jose.JWKSInvalid || !(err instanceof jose.JOSEError)) {
      throw unavailable("The identity provider's keys cannot be fetched; try again shortly");
    }
    throw new TokenRefused(err.code === "ERR_JWT_EXPIRED" ? "token expired" : err.message);
  }
}

/** The groups claim: a list or a single string, possibly nested (realm_access.roles). */
export function groupsOf(payload: JWTPayload, claim: string): string[] {
  let value: unknown = payload;
  for (const part of claim.split(".")) value = value && typeof value === "object" ? (value as Record<string, unknown>)[part] : undefined;
  const list = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
  return [...new Set(list.filter((g): g is string => typeof g === "string" && g.length > 0 && g.length <= 256))].slice(0, 500);
}

/** A refused federated sign-in, in the audit trail as a failed auth.login ("OIDC: <why>"; never a token). */
export async function recordOidcRefusal(services: Services, request: RequestInfo, message: string, userId: string | null = null) {
  await writeAudit(services.prisma, request, null, {
    action: "auth.login",
    outcome: "failure",
    entityType: "user",
    entityId: userId,
    message: `OIDC: ${message}`.slice(0, 500),
    actor: { type: "user", id: userId, userId },
  }).catch(() => undefined);
}

/** The provider vouched for a user whose account here is disabled (a 401 like any refused token). */
export class FederatedUserDisabled extends TRPCError {
  constructor() {
    super({ code: "UNAUTHORIZED", message: "Invalid ID token" });
  }
}

export async function signInWithOidc(services: Services, request: RequestInfo, input: { idToken: string; organizationId?: string }): Promise<TokenPair> {
  const settings = oidcSettings(services.config);
  if (!settings) throw notFound("Federated sign-in is not configured: OIDC provider");
  let claims: JWTPayload & { sub: string };
  try {
    claims = await verifyIdToken(settings, input.idToken);
  } catch (err) {
    if (!(err instanceof TokenRefused)) throw err;
    await recordOidcRefusal(services, request, err.message);
    throw unauthorized("Invalid ID token");
  }
  const user = await userOfIdToken(services, request, settings.issuer, claims);
  return startSession(services, request, user, input.organizationId, "via OIDC");
}

/**
 * The user a verified ID token of `issuer` names: found by (issuer, subject), else linked by a
 * provider-verified e-mail, else created; the token's groups are kept and the group mappings
 * applied, in one transaction. Refusals are audited and thrown: a conflict (409) or a token
 * without e-mail (400) as they are, a disabled user as FederatedUserDisabled.
 */
export async function userOfIdToken(services: Services, request: RequestInfo, issuer: string, claims: JWTPayload & { sub: string }) {
  const email = typeof claims.email === "string" ? claims.email.trim().toLowerCase() : null;
  const emailVerified = claims.email_verified === true || claims.email_verified === "true";
  const name = [claims.name, claims.preferred_username, email].find((v): v is string => typeof v === "string" && v.length > 0) ?? claims.sub;
  const groups = groupsOf(claims, services.config.OIDC_GROUPS_CLAIM);
  let user;
  try {
    user = await services.prisma.$transaction(async (tx) => {
      let found = await tx.user.findUnique({ where: { identityIssuer_identitySubject: { identityIssuer: issuer, identitySubject: claims.sub } } });
      if (!found && email) {
        const byEmail = await tx.user.findUnique({ where: { email } });
        if (byEmail) {
          // Linking hands the account to whoever the provider vouches for: only for an e-mail
          // address the provider has verified, and never over another identity.
          if (byEmail.identityIssuer) throw conflict("This e-mail address is linked to another identity");
          if (!emailVerified) throw conflict("The provider has not verified this e-mail address; the existing account cannot be linked");
          found = await tx.user.update({
            where: { id: byEmail.id },
            data: { identityIssuer: issuer, identitySubject: claims.sub, emailVerifiedAt: byEmail.emailVerifiedAt ?? new Date() },
          });
        }
      }
      if (!found) {
        if (!email) throw badRequest("The ID token carries no e-mail address; an account cannot be created from it");
        found = await tx.user.create({
          data: { email, name: name.slice(0, 200), passwordHash: null, identityIssuer: issuer, identitySubject: claims.sub, emailVerifiedAt: emailVerified ? new Date() : null },
        });
      }
      if (found.status !== "active") return found;
      await tx.federatedIdentity.upsert({
        where: { userId: found.id },
        create: { userId: found.id, issuer, subject: claims.sub, groups, lastTokenAt: new Date() },
        update: { issuer, subject: claims.sub, groups, lastTokenAt: new Date() },
      });
      const report = await reconcileMappings(tx, { userIds: [found.id], dryRun: false });
      const changed = report.added.length + report.updated.length + report.removed.length;
      if (changed > 0) {
        await writeAudit(tx, request, null, {
          action: "federation.reconcile",
          outcome: "success",
          entityType: "user",
          entityId: found.id,
          changes: { added: report.added, updated: report.updated, removed: report.removed },
          message: "group mappings applied at sign-in",
          actor: { type: "system", id: null, userId: found.id },
        });
      }
      return found;
    });
  } catch (err) {
    await recordOidcRefusal(services, request, (err as Error).message, null);
    throw err;
  }
  if (user.status !== "active") {
    await recordOidcRefusal(services, request, "user is disabled", user.id);
    throw new FederatedUserDisabled();
  }
  return user;
}
