// The agent's version as it reports it (fact agentVersion): agent/package.json's, kept in step
// by test/unit/agent/cli.test.ts.
export const AGENT_VERSION = "0.1.0";
