// deploy/kubernetes/ checked against the Kubernetes API's own schemas, as far as they can be had
// here (no cluster, no kubectl, no kubeconform): kubernetes-models ships the validators and the
// TypeScript types generated from Kubernetes' OpenAPI document (1.31's API and newer fields).
// Each document is checked twice: by the model's validator (types, required fields, formats)
// and by the TypeScript compiler against the model's type, whose excess-property check catches
// what the validator lets through: a misspelled or misplaced field, which `kubectl apply`
// (strict field validation) would refuse. Then what an operator relies on: probes, non-root,
// read-only root, secrets from the Secret, resources. No cluster runs them here; what a
// single-node engine can run of them, `podman kube play` does: the embedded variant's claim and
// Deployment (its pod spec: image, user, read-only root, the claim as the volume, the memory
// limit), ready, signed in, kept across `kube down` and `kube play` (the second describe).
import { execFile } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../support/oci-registry.js";
import { peersAvailable, requirePeer } from "../support/peers.js";
import { restClient } from "../support/rest-client.js";
import { ROOT } from "../support/server-process.js";
import { buildServiceImage, SERVICE_IMAGE, writeContainersConf } from "./service-image.js";

const KUBERNETES = path.join(ROOT, "deploy", "kubernetes");
const require = createRequire(import.meta.url);

interface Manifest {
  file: string;
  doc: { apiVersion: string; kind: string; metadata: { name: string }; spec?: any; stringData?: Record<string, string> };
}

function manifests(): Manifest[] {
  const files = fs.readdirSync(KUBERNETES, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".yaml")).sort();
  return files.flatMap((file) =>
    parseAllDocuments(fs.readFileSync(path.join(KUBERNETES, file), "utf8")).map((document) => {
      expect(document.errors, file).toEqual([]);
      return { file, doc: document.toJS() };
    }),
  );
}

/** kubernetes-models' module for a kind: the core group at its root (v1/Service), the others under their group (apps/v1/Deployment). */
function modelPath({ apiVersion, kind }: Manifest["doc"]): string {
  return `kubernetes-models/${apiVersion}/${kind}`;
}

/** TypeScript's diagnostics for `const doc: I<Kind> = <the document>` per document, in one program. */
function typeErrors(all: Manifest[]): string[] {
  const virtual = path.join(ROOT, "test", "deploy", "kubernetes-manifests.generated.ts");
  const source = all
    .map(({ doc }, i) => `import type { I${doc.kind} as T${i} } from "${modelPath(doc)}";\nexport const doc${i}: T${i} = ${JSON.stringify(doc, null, 2)};`)
    .join("\n");
  const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [] };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (name === virtual ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === virtual || fileExists(name);
  const program = ts.createProgram([virtual], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `line ${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : "";
    return where + ts.flattenDiagnosticMessageText(d.messageText, "\n");
  });
}

describe("the Kubernetes manifests", () => {
  const all = manifests();
  const byFile = (file: string) => all.find((m) => m.file === file)!.doc;

  it("are valid against the Kubernetes API schemas", () => {
    expect(all.map((m) => `${m.file}: ${m.doc.kind}`)).toEqual([
      "embedded/deployment.yaml: Deployment",
      "embedded/pvc.yaml: PersistentVolumeClaim",
      "embedded/service.yaml: Service",
      "postgresql/deployment.yaml: Deployment",
      "postgresql/pdb.yaml: PodDisruptionBudget",
      "postgresql/service.yaml: Service",
      "secret.example.yaml: Secret",
    ]);
    for (const { file, doc } of all) {
      const Model = require(modelPath(doc))[doc.kind];
      expect(() => new Model(doc).validate(), file).not.toThrow();
    }
    expect(typeErrors(all)).toEqual([]);
  }, 120_000);

  it("the checks find mistakes: a wrong type, a misspelled field", () => {
    const deployment = structuredClone(byFile("postgresql/deployment.yaml"));
    const { Deployment } = require("kubernetes-models/apps/v1/Deployment");
    deployment.spec.template.spec.securityContext.runAsNonRoot = "yes";
    expect(() => new Deployment(deployment).validate()).toThrow(/runAsNonRoot must be boolean/);
    const misspelled = structuredClone(byFile("postgresql/deployment.yaml"));
    const container = misspelled.spec.template.spec.containers[0];
    container.readinesProbe = container.readinessProbe;
    delete container.readinessProbe;
    // the validator lets an unknown field through; the type check does not
    expect(() => new Deployment(misspelled).validate()).not.toThrow();
    expect(typeErrors([{ file: "misspelled", doc: misspelled }]).join("\n")).toMatch(/readinesProbe.*does not exist in type 'IContainer'/);
  }, 120_000);

  for (const variant of ["postgresql", "embedded"]) {
    it(`${variant}: probes on /healthz and /readyz, non-root with a read-only root, secrets from the Secret, measured resources`, () => {
      const deployment = byFile(`${variant}/deployment.yaml`);
      const pod = deployment.spec.template.spec;
      const [container] = pod.containers;
      expect(container.startupProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
      expect(container.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "http" });
      expect(container.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "http" });
      expect(container.ports).toEqual([{ name: "http", containerPort: 3000 }]);
      // the image's user, no privileges, nothing writable but the data volume at DATA_DIR
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001 });
      expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
      expect(container.volumeMounts).toEqual([{ name: "data", mountPath: "/var/lib/fleet" }]);
      // longer than the service's own grace for jobs (15 s)
      expect(pod.terminationGracePeriodSeconds).toBe(30);
      expect(container.envFrom[0].secretRef.name).toBe(byFile("secret.example.yaml").metadata.name);
      // from the idle memory measured here: ~120 MB on PostgreSQL, 220-300 MB with the embedded database in the process
      expect(container.resources.requests).toEqual({ cpu: "100m", memory: variant === "postgresql" ? "256Mi" : "384Mi" });
      // the Service reaches these pods on the named port
      const service = byFile(`${variant}/service.yaml`);
      expect(service.spec.selector).toEqual(deployment.spec.template.metadata.labels);
      expect(service.spec.ports[0].targetPort).toBe("http");
    });
  }

  it("postgresql: replicas with a disruption budget and a rolling update that keeps one ready; embedded: one pod on its claim, recreated", () => {
    const shared = byFile("postgresql/deployment.yaml");
    expect(shared.spec.replicas).toBe(2);
    expect(shared.spec.strategy.rollingUpdate).toEqual({ maxUnavailable: 0, maxSurge: 1 });
    expect(byFile("postgresql/pdb.yaml").spec).toEqual({ minAvailable: 1, selector: shared.spec.selector });
    // DATABASE_URL, the keys and the admin's password come from the Secret
    expect(Object.keys(byFile("secret.example.yaml").stringData!).sort()).toEqual(["BOOTSTRAP_ADMIN_PASSWORD", "DATABASE_URL", "ENCRYPTION_KEY", "JWT_SECRET"]);

    const embedded = byFile("embedded/deployment.yaml");
    expect(embedded.spec.replicas).toBe(1);
    expect(embedded.spec.strategy).toEqual({ type: "Recreate" });
    expect(embedded.spec.template.spec.volumes).toEqual([{ name: "data", persistentVolumeClaim: { claimName: byFile("embedded/pvc.yaml").metadata.name } }]);
  });
});

// Podman 4.3's kube play runs a Deployment's pod (one replica) and makes a named volume of a
// claim; it honours the image, runAsUser/runAsGroup, readOnlyRootFilesystem, envFrom (optional
// Secret absent here), the memory limit and the claim, but not the probes' named ports, fsGroup,
// seccomp or the strategy, and it publishes only a hostPort: the copy played adds one on the
// loopback, names the image under test and gives the claim and the Deployment names of their own.
describe.skipIf(!peersAvailable("podman", "mmdebstrap"))("the embedded variant's pod under podman kube play", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  let file: string;
  let deploymentOnly: string;
  const name = `fleet-kube-${process.pid}`;
  const container = `${name}-pod-0-fleet-manager`;
  const podman = async (args: string[], timeout = 300_000) =>
    (await promisify(execFile)(requirePeer("podman"), args, { env, timeout, maxBuffer: 64 * 1024 * 1024 })).stdout;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-kube-"));
    env = writeContainersConf(dir);
    await buildServiceImage(podman);
    port = await freePort();
    const claim = structuredClone(manifests().find((m) => m.file === "embedded/pvc.yaml")!.doc);
    const deployment = structuredClone(manifests().find((m) => m.file === "embedded/deployment.yaml")!.doc);
    claim.metadata.name = `${name}-data`;
    deployment.metadata.name = name;
    const pod = deployment.spec.template.spec;
    pod.volumes[0].persistentVolumeClaim.claimName = claim.metadata.name;
    pod.containers[0].image = SERVICE_IMAGE;
    pod.containers[0].ports[0] = { ...pod.containers[0].ports[0], hostPort: port, hostIP: "127.0.0.1" };
    file = path.join(dir, "embedded.yaml");
    fs.writeFileSync(file, [claim, deployment].map((doc) => JSON.stringify(doc)).join("\n---\n"));
    // played again, the claim is already there (Podman refuses to make its volume twice)
    deploymentOnly = path.join(dir, "deployment.yaml");
    fs.writeFileSync(deploymentOnly, JSON.stringify(deployment));
  }, 40 * 60_000);

  afterAll(async () => {
    if (!env) return;
    await podman(["kube", "down", file]).catch(() => undefined);
    await podman(["volume", "rm", "--force", `${name}-data`]).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const ready = () => expect.poll(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status, { timeout: 240_000, interval: 500 }).toBe(200);

  it("starts as uid 10001 on a read-only root with the claim as DATA_DIR, signs the admin in and keeps its records across kube down and kube play", async () => {
    await podman(["kube", "play", file]);
    await ready();
    const [inspected] = JSON.parse(await podman(["inspect", container]));
    expect(inspected.HostConfig.ReadonlyRootfs).toBe(true);
    expect(inspected.Config.User).toBe("10001:10001");
    expect(inspected.HostConfig.Memory).toBe(1280 * 1024 * 1024);
    expect(inspected.Mounts.map((m: { Name: string; Destination: string }) => [m.Name, m.Destination])).toEqual([[`${name}-data`, "/var/lib/fleet"]]);
    await expect(podman(["exec", container, "sh", "-c", "echo x > /app/x"])).rejects.toThrow(/Read-only file system/);

    // no Secret: the first start generated the admin's password into the claim (kubectl exec ... cat)
    const firstStart = await podman(["exec", container, "cat", "/var/lib/fleet/first-start.txt"]);
    const password = /password:\s+(\S+)/.exec(firstStart)![1];
    const api = restClient(`http://127.0.0.1:${port}`, null);
    const login = await api("POST", "/api/v1/auth/login", { body: { email: "admin@example.com", password } });
    expect(login.status).toBe(200);
    const token = login.body.accessToken as string;
    expect((await api("POST", "/api/v1/enrollment-tokens", { token, body: { name: "kept on the claim" } })).status).toBe(201);

    // the pod goes, the claim stays: a new pod finds the database and the generated keys (the session still holds)
    await podman(["kube", "down", file]);
    await podman(["kube", "play", deploymentOnly]);
    await ready();
    const listed = await api("GET", "/api/v1/enrollment-tokens", { token });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((t: { name: string }) => t.name)).toEqual(["kept on the claim"]);
  }, 15 * 60_000);
});
