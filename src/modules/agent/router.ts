// /api/v1/agent: what devices call (docs/devices.md, "The device agent protocol").
// Enrollment proves itself with an enrollment token; everything else with a device token
// (device-auth.ts). API keys and user tokens are refused here, device tokens everywhere else.
import { deviceProcedure, deviceProcedureCheckedByHandler, publicProcedure, router } from "../../trpc/procedures.js";
import { z } from "zod";
import { enrollDevice } from "./enroll.js";
import { componentPackage } from "./package.js";
import { handleHeartbeat } from "./heartbeat.js";
import { renewOwnCertificate } from "./renew.js";
import { remoteAgentProcedures } from "./remote-wait.js";
import { tpmChallenge, tpmChallengeInput, tpmChallengeOutput } from "../tpm-ek-cas/attestation.js";
import { enrollInput, enrollOutput, heartbeatInput, heartbeatOutput, renewInput, renewOutput } from "./schemas.js";

const TAG = "Device agent";
const deviceToken = "Authorization: Bearer <JWT signed with the device key; header x5t#S256 = certificate fingerprint; sub = device id; exp at most 5 minutes>";

export const agentRouter = router({
  enroll: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/agent/enroll",
        tags: [TAG],
        summary: "Enroll a device with an enrollment token and a CSR",
        description:
          "No API key: the enrollment token is the credential (401 when invalid, expired, revoked or used up). 409 when the " +
          "reportedDeviceId is already claimed in the organization or the organization has no usable default CA; 400 for a bad CSR.",
      },
      successStatus: 201,
    })
    .input(enrollInput)
    .output(enrollOutput)
    .mutation(({ ctx, input }) => enrollDevice(ctx.services, ctx.request, input)),

  tpmChallenge: publicProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/agent/tpm/challenge",
        tags: [TAG],
        summary: "A credential-activation challenge for a TPM's endorsement and attestation keys (fleet-agent enroll --tpm)",
        description:
          "No credential: the answer is encrypted to the endorsement key, and only the TPM holding it, with the attestation key loaded, can " +
          "activate it (TPM2_ActivateCredential). The recovered secret goes into the `tpm` evidence of /agent/enroll or /agent/certificate/renew " +
          "within 5 minutes. 400 for an EK certificate that is not an RSA certificate or an attestation key that is not a restricted signing key.",
      },
    })
    .input(tpmChallengeInput)
    .output(tpmChallengeOutput)
    .mutation(({ ctx, input }) => tpmChallenge(ctx.services.jwtKey, input)),

  heartbeat: deviceProcedureCheckedByHandler
    .meta({
      openapi: {
        method: "POST",
        path: "/agent/heartbeat",
        tags: [TAG],
        summary: "Report status and facts; receive the desired state and the heartbeat interval",
        description: `${deviceToken}. Marks the device online (or error), records its facts and lastSeenAt.`,
        protect: true,
      },
    })
    .input(heartbeatInput)
    .output(heartbeatOutput)
    // REST callers reach the lean route of src/modules/agent/heartbeat-route.ts (same handler, same
    // schemas, mounted before the REST facade); this procedure documents the operation in
    // openapi.json and serves tRPC clients.
    .mutation(({ ctx, input }) => handleHeartbeat(ctx.services, ctx.device, input, ctx.request.sourceIp)),

  renewCertificate: deviceProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/agent/certificate/renew",
        tags: [TAG],
        summary: "Get a new certificate for a new CSR, authenticated with the current one",
        description: `${deviceToken}. The current certificate stays valid until it expires.`,
        protect: true,
      },
      successStatus: 201,
    })
    .input(renewInput)
    .output(renewOutput)
    .mutation(({ ctx, input }) => renewOwnCertificate(ctx.services, ctx.request, ctx.device, input)),

  componentPackage: deviceProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/agent/deployments/{deploymentId}/components/{component}",
        tags: [TAG],
        summary: "Get the compose file of one component of a deployment the device runs",
        description:
          `${deviceToken}. The service reads the component's oci:// package with the organization's registry credential (which ` +
          "never reaches the device) and answers its compose file with the sha256 digest the registry gave, and a short-lived pull grant " +
          "for the images of the organization's private registries it names (pulled through the service's read-only registry proxy at /v2/). 404 unless the " +
          "deployment targets this device for an install; 422 when the artifact holds no compose layer; 503 when the registry " +
          "cannot be read now.",
        protect: true,
      },
    })
    .input(z.object({
      deploymentId: z.string().uuid(),
      component: z.string().regex(/^[a-z0-9-]+$/, "a component name: lowercase letters, digits and '-'"),
    }))
    .output(z.object({
      component: z.string(), repository: z.string(), revision: z.string(), manifestDigest: z.string(),
      digest: z.string().describe("sha256 of content, as the registry names the layer"), mediaType: z.string(),
      content: z.string().describe("the compose file (YAML)"),
      pullGrant: z.object({
        username: z.string(),
        token: z.string().describe("the password: a signed grant, valid until expiresAt, for these repositories of this deployment on this device only"),
        expiresAt: z.string().datetime(),
        repositories: z.array(z.object({
          repository: z.string().describe("as the compose file names it, without tag: registry.example/team/app"),
          proxy: z.string().describe("its name at the service's registry proxy: pull <service host>/<proxy>:<tag> with the grant, then tag it as repository:<tag>"),
        })),
      }).nullable().describe("how to pull the images of the organization's private registries the file names (docs/agent.md, \"Private registries\"); null when it names none"),
    }))
    .query(({ ctx, input }) => componentPackage(ctx.services, ctx.device, input.deploymentId, input.component)),
  ...remoteAgentProcedures, // remote access: the long-poll and the refusal (remote-wait.ts)
});
