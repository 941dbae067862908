"""Linear attention (phi = elu + 1) and Linformer, simulated by one program each."""
