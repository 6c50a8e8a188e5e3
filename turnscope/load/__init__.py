"""Many scripted or LLM-driven calls at once against one agent: the plan, the calls, the
aggregate report.

The calls run through the same ``place_call`` as ``turnscope call``, spread over one event loop
per core (worker processes) or over Ray actors; each call leaves its own full bundle.
"""

from turnscope.load.plan import LoadPlan, Slot
from turnscope.load.record import CallRecord
from turnscope.load.report import LoadReport, aggregate

__all__ = ["CallRecord", "LoadPlan", "LoadReport", "Slot", "aggregate"]
