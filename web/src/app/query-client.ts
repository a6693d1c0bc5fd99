// One QueryClient for the console. Reads stay fresh for 15 s (the realtime channel
// invalidates what changes sooner); a 4xx is never retried (the answer will not change), a
// lost connection is, a few times. A 401 anywhere means the session ended: back to sign-in,
// then to the page that was open.
import { MutationCache, QueryCache, QueryClient, type QueryKey } from "@tanstack/react-query";
import { statusOf } from "../api/client";

let onSessionEnded: () => void = () => undefined;

/** The router registers where a 401 leads (src/app/routes.tsx). */
export function setSessionEndedHandler(handler: () => void) {
  onSessionEnded = handler;
}

function noticeSessionEnd(error: unknown) {
  if (statusOf(error) === 401) onSessionEnded();
}

export const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError: noticeSessionEnd }),
  // A write names what it changes (ui/useAction.ts `invalidates`); it stays pending until
  // those queries are fresh, so a dialog closes onto the new list.
  mutationCache: new MutationCache({
    onError: noticeSessionEnd,
    onSuccess: (_data, _input, _context, mutation): Promise<unknown> =>
      Promise.all((mutation.meta?.invalidates ?? []).map((queryKey) => queryClient.invalidateQueries({ queryKey }))),
  }),
  defaultOptions: {
    queries: {
      staleTime: 15_000,
      retry: (failures, error) => statusOf(error) === 0 && failures < 3,
      refetchOnWindowFocus: true,
    },
    mutations: { retry: false },
  },
});

declare module "@tanstack/react-query" {
  interface Register {
    mutationMeta: { invalidates?: QueryKey[] };
  }
}
