// Registries: /api/v1/registries/<kind>. Each kind lives in its own folder (git/ now, oci/
// later); the manifest import they share is src/modules/applications/ingest.ts.
import { router } from "../../trpc/procedures.js";
import { gitRegistriesRouter } from "./git/router.js";
import { ociRegistriesRouter } from "./oci/router.js";

export const registriesRouter = router({
  git: gitRegistriesRouter,
  oci: ociRegistriesRouter,
});
