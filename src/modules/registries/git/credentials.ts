// Registry credentials: checked against the auth type, sealed at rest with the service's
// SecretBox, and unsealed only to build the Authorization header of a fetch.
import type { SecretBox } from "../../../lib/crypto.js";
import { badRequest } from "../../../trpc/errors.js";
import type { RegistryAuthType } from "../fields.js";

/**
 * Tokens travel as HTTP Basic with this user name: what GitHub, GitLab, Gitea and Azure
 * DevOps accept for a personal access token over smart HTTP.
 */
export const TOKEN_USERNAME = "x-access-token";

/** Throws 400 when the credential does not fit the auth type (the message never echoes it). */
export function assertCredentialFits(authType: RegistryAuthType, credential: string | null | undefined): void {
  if (authType === "NONE") {
    if (credential) throw badRequest("Invalid input: credential: only used with authType BASIC or TOKEN");
    return;
  }
  if (!credential) throw badRequest(`Invalid input: credential: required for authType ${authType}`);
  if (authType === "BASIC") {
    const colon = credential.indexOf(":");
    if (colon <= 0) throw badRequest("Invalid input: credential: must be username:password for authType BASIC");
  }
}

export function sealCredential(secrets: SecretBox, credential: string | null | undefined): string | null {
  return credential ? secrets.encrypt(credential) : null;
}

/** The Authorization header value for a registry, or undefined for NONE. */
export function authorizationHeader(secrets: SecretBox, authType: string, sealed: string | null): string | undefined {
  if (authType === "NONE" || !sealed) return undefined;
  const credential = secrets.decrypt(sealed);
  const pair = authType === "TOKEN" ? `${TOKEN_USERNAME}:${credential}` : credential;
  return `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
}
