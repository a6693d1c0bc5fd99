// Light, dark, or as the system says; remembered in this browser. On top of either, the
// organization's brand colour (organizations/branding.ts), set as the accent variables of the
// theme shown, so a theme change repaints it too.
import { useSyncExternalStore } from "react";
import { cssVariables, HEX_COLOR, paletteFor } from "../organizations/branding";

export type ThemeChoice = "light" | "dark" | "system";
const STORAGE_KEY = "fleet-console-theme";
const listeners = new Set<() => void>();
const systemDark = () => window.matchMedia("(prefers-color-scheme: dark)").matches;

export function themeChoice(): ThemeChoice {
  const stored = localStorage.getItem(STORAGE_KEY);
  return stored === "light" || stored === "dark" ? stored : "system";
}

let brandColor: string | null = null;

export function applyTheme() {
  const choice = themeChoice();
  const theme = choice === "system" ? (systemDark() ? "dark" : "light") : choice;
  const root = document.documentElement;
  root.dataset.theme = theme;
  // Inline custom properties on <html> win over the theme's; none: the theme's own accent.
  const variables = cssVariables(paletteFor(brandColor ?? "#000000", theme));
  for (const [name, value] of Object.entries(variables)) {
    if (brandColor) root.style.setProperty(name, value);
    else root.style.removeProperty(name);
  }
}

/** The organization's colour ("#rrggbb"), or null for the console's own. */
export function setBrandColor(color: string | null) {
  if (color === brandColor) return;
  brandColor = color;
  applyTheme();
}

const BRAND_KEY = "fleet-console-brand";

/**
 * The brand colour this browser last showed for `organizationId`: the shell paints it before
 * its first frame, so a reload does not flash the console's own colour until the organization
 * is read again (which then confirms or replaces it).
 */
export function rememberedBrandColor(organizationId: string): string | null {
  try {
    const saved = JSON.parse(localStorage.getItem(BRAND_KEY) ?? "null") as { organizationId?: unknown; color?: unknown } | null;
    return saved?.organizationId === organizationId && typeof saved.color === "string" && HEX_COLOR.test(saved.color) ? saved.color : null;
  } catch {
    return null;
  }
}

export function rememberBrandColor(organizationId: string, color: string | null) {
  if (color) localStorage.setItem(BRAND_KEY, JSON.stringify({ organizationId, color }));
  else localStorage.removeItem(BRAND_KEY);
}

export function setThemeChoice(choice: ThemeChoice) {
  if (choice === "system") localStorage.removeItem(STORAGE_KEY);
  else localStorage.setItem(STORAGE_KEY, choice);
  applyTheme();
  for (const l of listeners) l();
}

export function useTheme(): ThemeChoice {
  return useSyncExternalStore((l) => {
    listeners.add(l);
    return () => listeners.delete(l);
  }, themeChoice);
}

export function watchSystemTheme() {
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);
}
