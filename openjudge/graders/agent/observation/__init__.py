"""Observation-level agent graders (``observation_information_gain.ObservationInformationGainGrader``)."""
