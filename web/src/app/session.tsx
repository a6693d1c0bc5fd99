// Who is signed in, where they act and what they may do: the service's own answer
// (GET /tenant/context), loaded before any page of the console renders. Buttons and
// navigation ask `useCan("devices:write")` with the same permission keys the API checks,
// resolved by the API itself (its list is already expanded from roles and wildcards).
import { useQueryClient, useSuspenseQuery } from "@tanstack/react-query";
import { useNavigate } from "@tanstack/react-router";
import type { Permission } from "../../../src/trpc/permissions";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";

export type Session = RouterOutputs["tenant"]["context"];
export type { Permission };

export const sessionQuery = () => q.tenant.context.options();

/**
 * Whether this browser may hold a session: the service sets a flag scripts can read beside
 * the HttpOnly session cookie, with the same life (src/trpc/session-cookie.ts). Without it the
 * console goes to sign-in without asking (a 401 there would be an error in the browser's console).
 */
export function mayBeSignedIn(): boolean {
  return /(^|;\s*)fm_signed_in=1(;|$)/.test(document.cookie);
}

/** The session turned out to be over (a 401): the flag no longer says anything. */
export function forgetSignedIn(): void {
  document.cookie = "fm_signed_in=; Path=/; Max-Age=0; SameSite=Strict";
}

export function useSession(): Session {
  return useSuspenseQuery(sessionQuery()).data;
}

export function useCan(permission: Permission): boolean {
  return useSession().permissions.includes(permission);
}

/**
 * After the session starts acting in another organization (a member's switch, a Super Admin's
 * tenant switch or its end): everything read so far belongs to the organization left. Reset
 * (not merely drop) every query, so that the mounted ones, the session included, read again
 * instead of showing what they held; then open the overview.
 */
export function useOrganizationChanged(): () => Promise<void> {
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  return async () => {
    await queryClient.resetQueries();
    await navigate({ to: "/" });
  };
}
