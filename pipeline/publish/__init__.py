"""Publishing a sweep after its runs: figures and the HTML report, the Gantt chart, MLflow tracking (in a
process of its own) and the publishing steps themselves (:mod:`pipeline.publish.publish_run`)."""
