// An organization's branding as the console reads it from the free-form `branding` object of
// the organization (spec: free keys): `primaryColor` ("#rrggbb") and `logo` (an image as a
// data: URL, so that showing it asks no other host and the CSP's img-src 'self' data: holds).
// The colour is the organization's; what the console paints with is derived from it per theme,
// moved in lightness only as far as needed for WCAG contrast (4.5:1 for the accent as text on
// every surface it sits on, and for the text on an accent button), so any colour stays legible.

export interface Branding {
  primaryColor?: string;
  logo?: string;
}

export const HEX_COLOR = /^#[0-9a-f]{6}$/i;
export const LOGO_TYPES = ["image/png", "image/jpeg", "image/svg+xml", "image/webp", "image/gif"] as const;
/** the largest logo file accepted (its data: URL is about a third longer; the API's body limit is 1 MiB) */
export const LOGO_MAX_BYTES = 200 * 1024;
const LOGO_DATA_URL = new RegExp(`^data:(${LOGO_TYPES.map((t) => t.replace("+", "\\+")).join("|")});base64,[A-Za-z0-9+/]+=*$`);

/** The branding keys the console understands, from whatever the organization stores. */
export function brandingOf(stored: Record<string, unknown> | undefined): Branding {
  const result: Branding = {};
  if (typeof stored?.primaryColor === "string" && HEX_COLOR.test(stored.primaryColor)) result.primaryColor = stored.primaryColor.toLowerCase();
  if (typeof stored?.logo === "string" && LOGO_DATA_URL.test(stored.logo)) result.logo = stored.logo;
  return result;
}

/** The stored object with the console's keys replaced (other keys someone set through the API stay). */
export function withBranding(stored: Record<string, unknown>, branding: Branding): Record<string, unknown> {
  const { primaryColor: _c, logo: _l, ...others } = stored;
  return { ...others, ...(branding.primaryColor ? { primaryColor: branding.primaryColor } : {}), ...(branding.logo ? { logo: branding.logo } : {}) };
}

// ---- colour ----------------------------------------------------------------------------------

type Rgb = [number, number, number];
type Hsl = [number, number, number]; // hue 0-360, saturation and lightness 0-1

function hexToRgb(hex: string): Rgb {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function rgbToHex([r, g, b]: Rgb): string {
  return `#${[r, g, b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("")}`;
}

function rgbToHsl([r, g, b]: Rgb): Hsl {
  const [rn, gn, bn] = [r / 255, g / 255, b / 255];
  const max = Math.max(rn, gn, bn);
  const min = Math.min(rn, gn, bn);
  const l = (max + min) / 2;
  if (max === min) return [0, 0, l];
  const d = max - min;
  const s = l > 0.5 ? d / (2 - max - min) : d / (max + min);
  const h = max === rn ? (gn - bn) / d + (gn < bn ? 6 : 0) : max === gn ? (bn - rn) / d + 2 : (rn - gn) / d + 4;
  return [h * 60, s, l];
}

function hslToRgb([h, s, l]: Hsl): Rgb {
  const k = (n: number) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return [f(0) * 255, f(8) * 255, f(4) * 255];
}

function luminance(hex: string): number {
  const [r, g, b] = hexToRgb(hex).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG contrast ratio of two colours, 1 to 21. */
export function contrast(a: string, b: string): number {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

const withLightness = (hsl: Hsl, l: number) => rgbToHex(hslToRgb([hsl[0], hsl[1], Math.min(1, Math.max(0, l))]));

/** The surfaces of each theme (styles/theme.css) the accent is read on, and the text on accent buttons. */
export const THEME_SURFACES = {
  light: { surfaces: ["#ffffff", "#f6f7f9", "#f1f3f6", "#eef1f5"], onAccent: "#ffffff" },
  dark: { surfaces: ["#171b21", "#0f1216", "#1e232b", "#232a33"], onAccent: "#0b1220" },
} as const;
export type ThemeName = keyof typeof THEME_SURFACES;

export const TEXT_CONTRAST = 4.5;

export interface Palette {
  accent: string;
  accentStrong: string;
  accentSoft: string;
  onAccent: string;
  focus: string;
}

/**
 * The console's accent variables for one theme from a brand colour. The soft tint (selected
 * rows, badges) is the brand hue near the background; the accent keeps the brand's hue and
 * saturation and moves darker (light theme) or lighter (dark theme) in small steps until it
 * reaches 4.5:1 against every surface, the soft tint and the button text. Hover
 * (`accentStrong`) goes one step further in the same direction.
 */
export function paletteFor(color: string, theme: ThemeName): Palette {
  const { surfaces, onAccent } = THEME_SURFACES[theme];
  const hsl = rgbToHsl(hexToRgb(color));
  const saturation = Math.min(hsl[1], 0.85);
  const accentSoft = theme === "light" ? withLightness([hsl[0], saturation, 0], 0.94) : withLightness([hsl[0], saturation * 0.6, 0], 0.17);
  const backgrounds = [...surfaces, accentSoft, onAccent];
  const step = theme === "light" ? -0.01 : 0.01;
  const legible = (c: string) => backgrounds.every((bg) => contrast(c, bg) >= TEXT_CONTRAST);
  let l = hsl[2];
  let accent = color.toLowerCase();
  // At most 100 steps: lightness 0 (black) passes every light surface, 1 (white) every dark one.
  for (let i = 0; i <= 100 && !legible(accent); i++) {
    l += step;
    accent = withLightness(hsl, l);
  }
  const accentStrong = withLightness(hsl, l + step * 8);
  return { accent, accentStrong, accentSoft, onAccent, focus: accent };
}

/** The CSS variables of styles/theme.css that a palette sets. */
export function cssVariables(p: Palette): Record<string, string> {
  return { "--accent": p.accent, "--accent-strong": p.accentStrong, "--accent-soft": p.accentSoft, "--on-accent": p.onAccent, "--focus": p.focus };
}
