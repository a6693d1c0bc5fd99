// Light, dark, or as the system says; remembered in this browser.
import { useSyncExternalStore } from "react";

export type ThemeChoice = "light" | "dark" | "system";
const STORAGE_KEY = "fleet-console-theme";
const listeners = new Set<() => void>();
const systemDark = () => window.matchMedia("(prefers-color-scheme: dark)").matches;

export function themeChoice(): ThemeChoice {
  const stored = localStorage.getItem(STORAGE_KEY);
  return stored === "light" || stored === "dark" ? stored : "system";
}

export function applyTheme() {
  const choice = themeChoice();
  document.documentElement.dataset.theme = choice === "system" ? (systemDark() ? "dark" : "light") : choice;
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
