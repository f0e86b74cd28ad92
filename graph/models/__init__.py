"""Chat models: the factory that turns settings into a model for the configured endpoint
(`factory`), and the embedded llama.cpp model that runs with no key and no network (`local`)."""
