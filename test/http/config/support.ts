// Shared by the fleet-as-code tests: the deployment tests' parameter declarations, with the
// secret one optional (a document never holds a secret, so a required one could never be
// created from documents alone).
import { DEFAULT_PARAMETERS_YAML } from "../deployments/support.js";

export const PARAMETERS_YAML = DEFAULT_PARAMETERS_YAML.replace("    required: true\n", "");
