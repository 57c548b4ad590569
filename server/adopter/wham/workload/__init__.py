"""Training-step workloads: torch tracing on the meta device (the only torch user in Adopter), the model zoo,
and the subprocess that runs them. Importing this package does not import torch; its modules do."""
