"""Observation-level agent graders: :class:`~openjudge.graders.ObservationInformationGainGrader`.

Its module, :mod:`.observation_information_gain`, keeps the import path of OpenJudge's guide.
"""
