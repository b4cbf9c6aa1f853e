"""The publish pipeline after a confirmation: the steps (:mod:`~bot.service.pipeline.steps`),
the sign step (:mod:`~bot.service.pipeline.sign`), the steps that tell python.org and the
forum (:mod:`~bot.service.pipeline.announcing`) and the runner that journals them. Part of the
service layer: it may import what the service layer may."""
