// deploy/kubernetes/ checked against the Kubernetes API's own schemas, as far as they can be had
// here (no cluster, no kubectl, no kubeconform): kubernetes-models ships the validators and the
// TypeScript types generated from Kubernetes' OpenAPI document (1.31's API and newer fields).
// Each document is checked twice: by the model's validator (types, required fields, formats)
// and by the TypeScript compiler against the model's type, whose excess-property check catches
// what the validator lets through: a misspelled or misplaced field, which `kubectl apply`
// (strict field validation) would refuse. Then what an operator relies on: probes, non-root,
// read-only root, secrets from the Secret, resources. Rendered and validated only, never run.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import ts from "typescript";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/server-process.js";

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
      expect(container.resources.requests).toEqual({ cpu: "100m", memory: "384Mi" });
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
