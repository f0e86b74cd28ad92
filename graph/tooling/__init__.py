"""Tools as the agent uses them: which tools a run gets (`registry`), running one call so that
every failure becomes an observation (`runner`) and pausing calls for a person's approval
(`approval`). The tools themselves live in the top-level `tools` package."""
