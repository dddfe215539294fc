"""Distributed grading: ``openjudge run --engine ray``, :class:`RayBackend` and :func:`grade_on_ray`.

An application-layer package (like :mod:`openjudge.cli`): it builds jobs from configs
and so reaches providers through :mod:`openjudge.config`. Ray is imported only when a
run starts; without it the run fails with an ImportError naming the ``ray`` extra
(``pip install "openjudge-graders[ray]"``).

* :class:`RayBackend`: the job engine's back end that grades on Ray Data actors.
* :func:`grade_on_ray`: the job engine with that back end, as one call.
* :func:`plan_workers` (a :class:`WorkerPlan`): how provider limits are split per worker.
"""

from openjudge.distributed._limits import WorkerPlan as WorkerPlan
from openjudge.distributed._limits import plan_workers as plan_workers
from openjudge.distributed._ray_backend import RayBackend as RayBackend
from openjudge.distributed._ray_backend import grade_on_ray as grade_on_ray

__all__ = ["RayBackend", "WorkerPlan", "grade_on_ray", "plan_workers"]
