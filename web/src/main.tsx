import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { queryClient } from "./app/query-client";
import { router } from "./app/routes";
import { applyTheme, watchSystemTheme } from "./app/theme";
import { reloadOnceWhenAChunkFailsToLoad } from "./app/chunk-load-recovery";
import { ToastProvider } from "./ui/toast";
import "./styles/theme.css";
import "./ui/ui.css";

applyTheme();
watchSystemTheme();
reloadOnceWhenAChunkFailsToLoad();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <ToastProvider>
        <RouterProvider router={router} />
      </ToastProvider>
    </QueryClientProvider>
  </StrictMode>,
);
