"""Action-level agent graders (``action_loop.ActionLoopDetectionGrader``)."""
