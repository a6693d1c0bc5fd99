// fleet-agent: enroll | run | status (docs/agent.md).
console.log("fleet-agent: not yet");
