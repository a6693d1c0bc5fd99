// The output formats of -o (output.ts renders them); apart so that the command tree does not load the YAML printer.
export type Format = "table" | "wide" | "json" | "yaml" | "name";
export const FORMATS: Format[] = ["table", "wide", "json", "yaml", "name"];
