"""Views for the people who answer for the memory: the timeline (`log`) and the HTML report."""
