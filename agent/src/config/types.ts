// The configuration part of the heartbeat, as the wire contract of issue 48 has it
// (docs/configuration.md, "On the device"): what the service answers, what the agent reports.

/** One file of a revision, as the heartbeat's answer hands it over. */
export interface ConfigFileEntry {
  path: string;
  contentBase64: string;
  /** octal text, "0644" */
  mode: string;
  /** "user:group", "user", or numeric ids; absent: root's (the agent's) */
  owner?: string;
  /** of the decoded content, hex */
  sha256: string;
  /** provenance: the layer the file came from (logs and reports only) */
  layer?: string;
}

export interface ActivationEntry {
  layer: string;
  /** argv: run without a shell */
  command: string[];
  /** run after a revision that changed any of these files */
  paths: string[];
}

/** heartbeatOutput.configuration */
export interface ConfigurationAnswer {
  revision: string;
  /** false: only the revision, because the device reported it applied already */
  full: boolean;
  files?: ConfigFileEntry[];
  vars?: Record<string, string>;
  activations?: ActivationEntry[];
  /** the operator chose to restore drifted files: rewrite them */
  restore?: boolean;
}

export interface DriftEntry {
  path: string;
  /** what is on disk now; absent: the file is missing */
  sha256?: string;
  /** what is on disk now, when it is at most 128 KiB (and the report's contents at most 512 KiB): the operator may accept it as an override */
  contentBase64?: string;
}

/** heartbeatInput.configuration */
export interface ConfigurationReport {
  revision: string;
  state: "applied" | "failed";
  message?: string;
  /** the revision in effect now (with failed: the one kept) */
  appliedRevision?: string;
  drift?: DriftEntry[];
}

/** A file the agent owns: written by it for the revision in effect. */
export interface OwnedFile {
  path: string;
  sha256: string;
  mode: number;
  uid: number;
  gid: number;
  layer?: string;
}

/** config/applied.json: the revision in effect and the files it owns. */
export interface AppliedRevision {
  revision: string;
  files: OwnedFile[];
}
