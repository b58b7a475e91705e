"""ClinDiag: the doctor's environment, the case loader, and the provider and judge roles."""
