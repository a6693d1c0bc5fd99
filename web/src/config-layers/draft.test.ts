import { describe, expect, it } from "vitest";
import { draftChanged, draftOf, draftProblems, patchOf, type RevisionContent } from "./draft";
import { contentFieldOf, createFieldOf, precedenceOrder } from "./layer-words";

const before: RevisionContent = {
  variables: { MQTT_URL: "mqtt://a", LOG_LEVEL: "info" },
  files: [
    { path: "/etc/fleet/a.conf", mode: "0644", owner: null, template: true, binary: false, content: "a={{ vars.LOG_LEVEL }}", contentBase64: null },
    { path: "/etc/fleet/blob", mode: "0600", owner: "root", template: false, binary: true, content: null, contentBase64: "AAEC" },
  ],
  secretNames: ["DB_PASSWORD"],
  activation: { command: ["systemctl", "reload", "mosquitto"] },
};

describe("layer draft", () => {
  it("an untouched draft changes nothing and sends no secret", () => {
    const draft = draftOf(before);
    expect(draftChanged(draft, before)).toBe(false);
    const patch = patchOf(draft, before);
    expect(patch.secrets).toBeUndefined();
    expect(patch.activation).toBeUndefined();
    expect(patch.files).toEqual([
      { path: "/etc/fleet/a.conf", content: "a={{ vars.LOG_LEVEL }}", mode: "0644", template: true },
      { path: "/etc/fleet/blob", contentBase64: "AAEC", mode: "0600", owner: "root", template: false },
    ]);
  });

  it("sends only the secrets replaced or removed, leaves blank rows out, and clears the activation", () => {
    const draft = draftOf(before);
    draft.secrets[0].removed = true;
    draft.secrets.push({ name: "API_TOKEN", stored: false, value: "t", removed: false });
    draft.variables.push({ name: " ", value: "ignored" });
    draft.activation = "  ";
    const patch = patchOf(draft, before);
    expect(patch.secrets).toEqual({ DB_PASSWORD: null, API_TOKEN: "t" });
    expect(Object.keys(patch.variables!)).toEqual(["MQTT_URL", "LOG_LEVEL"]);
    expect(patch.activation).toBeNull();
    expect(draftChanged(draft, before)).toBe(true);
  });

  it("names duplicates and a new secret without a value", () => {
    const draft = draftOf(before);
    draft.variables.push({ name: "MQTT_URL", value: "x" });
    draft.secrets.push({ name: "NEW", stored: false, value: "", removed: false });
    expect(draftProblems(draft)).toEqual({ "variables.2.name": "MQTT_URL is given twice", "secrets.1.value": "a new secret needs a value" });
  });
});

describe("layer words", () => {
  it("lists layers in precedence: the default, selectors by order, device overrides", () => {
    const layers = [
      { name: "dev", kind: "device" as const, order: null },
      { name: "b", kind: "selector" as const, order: 20 },
      { name: "a", kind: "selector" as const, order: 5 },
      { name: "org", kind: "organization" as const, order: null },
    ];
    expect(precedenceOrder(layers).map((l) => l.name)).toEqual(["org", "a", "b", "dev"]);
  });

  it("maps a refusal to its field", () => {
    expect(createFieldOf("bad", ["name"])).toBe("name");
    expect(createFieldOf('name: a layer named "x" exists')).toBe("name");
    expect(createFieldOf("something else")).toBeNull();
    // the API's third file is the editor's fourth row when the second row was blank
    // (the API answers path segments as strings)
    expect(contentFieldOf({ files: [0, 2, 3], variables: [] })("x", ["files", "2", "path"])).toBe("files.3.path");
  });
});
