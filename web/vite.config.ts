// The web console's build: React, one entry, routes split into their own chunks (lazy
// imports in web/src/app/routes.tsx). `npm run dev:web` serves it with hot reload and sends
// /api and /trpc (WebSocket included) to a service running on PORT (default 3000).
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import { fileURLToPath } from "node:url";

const target = `http://127.0.0.1:${process.env.PORT ?? 3000}`;

export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The strict CSP (script-src 'self') allows no inline script: keep everything in files.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    chunkSizeWarningLimit: 300,
  },
  server: {
    proxy: {
      "/api": { target, ws: true },
      "/trpc": { target },
    },
  },
});
