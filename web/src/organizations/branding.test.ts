import { describe, expect, it } from "vitest";
import { brandingOf, contrast, paletteFor, TEXT_CONTRAST, THEME_SURFACES, withBranding, type ThemeName } from "./branding";

const THEMES: ThemeName[] = ["light", "dark"];

/** every colour on a coarse grid of the cube, bright, dark and grey ones included */
function grid(): string[] {
  const steps = [0, 51, 102, 153, 204, 255];
  const out: string[] = [];
  for (const r of steps) for (const g of steps) for (const b of steps) out.push(`#${[r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("")}`);
  return out;
}

describe("branding palette", () => {
  it("gives every colour an accent readable at 4.5:1 on each surface, its soft tint and under the button text, in both themes", () => {
    for (const color of [...grid(), "#ffcc00", "#00ffff", "#777777", "#1d5fd6"]) {
      for (const theme of THEMES) {
        const p = paletteFor(color, theme);
        for (const bg of [...THEME_SURFACES[theme].surfaces, p.accentSoft, p.onAccent]) {
          expect(contrast(p.accent, bg), `${color} ${theme} on ${bg}`).toBeGreaterThanOrEqual(TEXT_CONTRAST);
        }
        // hover keeps the button text readable
        expect(contrast(p.accentStrong, p.onAccent), `${color} ${theme} hover`).toBeGreaterThanOrEqual(TEXT_CONTRAST);
      }
    }
  });

  it("keeps a colour that is already legible as it is, and moves a light one only in lightness", () => {
    expect(paletteFor("#1D5FD6", "light").accent).toBe("#1d5fd6");
    expect(paletteFor("#6ea3ff", "dark").accent).toBe("#6ea3ff");
    const yellow = paletteFor("#ffcc00", "light").accent;
    expect(yellow).not.toBe("#ffcc00");
    // still a yellow-orange hue, darker: red channel above green above blue
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(yellow.slice(i, i + 2), 16));
    expect(r).toBeGreaterThan(g);
    expect(g).toBeGreaterThan(b);
  });

  it("contrast is the WCAG ratio", () => {
    expect(contrast("#000000", "#ffffff")).toBeCloseTo(21, 5);
    expect(contrast("#777777", "#777777")).toBe(1);
  });
});

describe("branding object", () => {
  it("reads only a hex colour and an image data: URL, whatever else is stored", () => {
    expect(brandingOf({ primaryColor: "#AABBCC", logo: "data:image/png;base64,iVBORw0KGgo=" })).toEqual({ primaryColor: "#aabbcc", logo: "data:image/png;base64,iVBORw0KGgo=" });
    expect(brandingOf({ primaryColor: "red", logo: "https://example.com/logo.png" })).toEqual({});
    expect(brandingOf({ logo: "data:text/html;base64,PHNjcmlwdD4=" })).toEqual({});
    expect(brandingOf(undefined)).toEqual({});
  });

  it("replaces the console's keys and keeps the others", () => {
    expect(withBranding({ primaryColor: "#000000", logo: "data:x", theme: "x" }, { primaryColor: "#112233" })).toEqual({ theme: "x", primaryColor: "#112233" });
  });
});
