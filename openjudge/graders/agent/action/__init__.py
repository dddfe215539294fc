"""Action-level agent graders: :class:`~openjudge.graders.ActionLoopDetectionGrader`.

Its module, :mod:`.action_loop`, keeps the import path of OpenJudge's guide.
"""
