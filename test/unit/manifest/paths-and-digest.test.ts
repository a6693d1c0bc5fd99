import { describe, expect, it } from "vitest";
import { manifestDigest, resolveManifestRelativePath } from "../../../src/modules/applications/manifest/index.js";
import { OUR_FORMAT_YAML } from "./fixtures.js";

describe("resolveManifestRelativePath", () => {
  it.each([
    ["apps/vision/app.yaml", "./icon.png", "apps/vision/icon.png"],
    ["apps/vision/app.yaml", "icon.png", "apps/vision/icon.png"],
    ["apps/vision/app.yaml", "resources/logo.svg", "apps/vision/resources/logo.svg"],
    ["apps/vision/app.yaml", "../shared/icon.png", "apps/shared/icon.png"],
    ["apps/vision/app.yaml", "../../icon.png", "icon.png"],
    ["app.yaml", "./icon.png", "icon.png"],
    ["./apps/app.yaml", "a/./b/../icon.png", "apps/a/icon.png"],
  ])("resolves %s + %s to %s", (manifestPath, relative, expected) => {
    expect(resolveManifestRelativePath(manifestPath, relative)).toBe(expected);
  });

  it.each([
    ["a .. escape", "apps/vision/app.yaml", "../../../etc/passwd"],
    ["an escape hidden in the middle", "app.yaml", "icons/../../secret.png"],
    ["an absolute path", "apps/vision/app.yaml", "/etc/passwd"],
    ["a Windows absolute path", "apps/vision/app.yaml", "C:\\icons\\a.png"],
    ["backslash separators", "apps/vision/app.yaml", "..\\..\\..\\secret"],
    ["a NUL byte", "apps/vision/app.yaml", "icon.png\0.svg"],
    ["an empty path", "apps/vision/app.yaml", ""],
    ["the repository root itself", "apps/app.yaml", ".."],
    ["a manifest path that itself escapes", "../outside/app.yaml", "icon.png"],
  ])("refuses %s", (_case, manifestPath, relative) => {
    expect(resolveManifestRelativePath(manifestPath, relative)).toBeNull();
  });
});

describe("manifestDigest", () => {
  it("is the sha256 hex of the text", () => {
    expect(manifestDigest("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(manifestDigest(OUR_FORMAT_YAML)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("changes when the manifest changes and only then", () => {
    expect(manifestDigest(OUR_FORMAT_YAML)).toBe(manifestDigest(`${OUR_FORMAT_YAML}`));
    expect(manifestDigest(OUR_FORMAT_YAML)).not.toBe(manifestDigest(OUR_FORMAT_YAML.replace("5m0s", "6m0s")));
  });
});
